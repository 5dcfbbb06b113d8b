// Which payment provider a tenant pays through (issue 37), and the credentials for each. Read from
// the environment only; a credential is never logged, printed or put in an error message.
import { MAX_ORDER_AMOUNT_MINOR } from './money.ts';

export const PROVIDERS = ['fake', 'stripe', 'alipay'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface StripeSettings {
  secretKey: string | undefined;
  webhookSecret: string | undefined;
  /** STRIPE_API_BASE: where the official SDK sends requests (a local double in tests). */
  apiBase: string | undefined;
  /** STRIPE_CURRENCY: the ISO currency every PaymentIntent is created in (lower case, Stripe's spelling). */
  currency: string;
}

export interface AlipaySettings {
  appId: string | undefined;
  /** The app's RSA2 private key (PEM or bare base64 PKCS#8/PKCS#1): signs every request. */
  privateKey: string | undefined;
  /** Alipay's RSA2 public key: verifies every answer and async notify. */
  publicKey: string | undefined;
  /** ALIPAY_GATEWAY: the gateway URL (…/gateway.do) the official SDK calls. */
  gateway: string | undefined;
}

/**
 * How recovery syncs an unknown payment's status with one provider (Hyperswitch's habit): when to
 * query again and how long a payment may wait for its buyer at the provider before it is closed.
 */
export interface StatusSync {
  /** After the first few immediate retries, the wait between queries starts here and doubles. */
  retryBaseMs: number;
  /** …up to this. */
  maxBackoffMs: number;
  /** A payment the provider holds for its buyer (3-D Secure, WAIT_BUYER_PAY) is closed after this long unknown. */
  closePendingAfterMs: number;
  /**
   * A real provider cannot close what it never received, so query and close both answer NOT_FOUND
   * while a lost request might still land. Past this long unknown, no request of ours can still be
   * in flight (each was cut at the pay timeout; Stripe's search lags a create by seconds): NOT_FOUND
   * is final and the order FAILS, its unit released. A charge that lands even later meets the
   * late-success path (re-reserve or refund with the fixed key).
   */
  notFoundFinalAfterMs: number;
}

/**
 * The defaults, each with its reason. The fake channel and Stripe answer a query at once and
 * consistently, so a miss is retried soon; Stripe's 3-D Secure gives the buyer an hour before the
 * PaymentIntent is cancelled. Alipay's buyer confirms on a phone and its notify may come hours
 * later: query rarely (its gateway limits callers) and wait two hours before closing the trade.
 */
export const DEFAULT_STATUS_SYNC: Record<ProviderName, StatusSync> = {
  fake: {
    retryBaseMs: 1_000,
    maxBackoffMs: 5 * 60_000,
    closePendingAfterMs: 15 * 60_000,
    notFoundFinalAfterMs: 15 * 60_000,
  },
  stripe: {
    retryBaseMs: 1_000,
    maxBackoffMs: 5 * 60_000,
    closePendingAfterMs: 60 * 60_000,
    notFoundFinalAfterMs: 10 * 60_000,
  },
  alipay: {
    retryBaseMs: 30_000,
    maxBackoffMs: 15 * 60_000,
    closePendingAfterMs: 2 * 3600_000,
    notFoundFinalAfterMs: 10 * 60_000,
  },
};

/**
 * How long one call to a provider may take before its answer counts as lost (UNKNOWN, never a
 * failure; recovery asks again), per provider, unless FLASHPAY_PAY_TIMEOUT_MS sets one for all.
 * The fake channel answers on loopback in a few milliseconds: 300 ms (the seed's) is plenty and
 * keeps its lost-reply tests quick. Stripe answers a confirmed PaymentIntent in 0.3–2 s, slower
 * with 3-D Secure checks or a far region; Alipay's face-to-face pay waits on the buyer's bank. At
 * 300 ms an ordinary pay at either would be UNKNOWN and cost a query; 10 s is above their usual
 * latency with margin, and still short for a buyer waiting at a flash sale.
 */
export const DEFAULT_PAY_TIMEOUT_MS: Readonly<Record<ProviderName, number>> = {
  fake: 300,
  stripe: 10_000,
  alipay: 10_000,
};

/** What the pay timeout is read from: the override (FLASHPAY_PAY_TIMEOUT_MS, when set) and the providers in use. */
export interface PayTimeoutSettings {
  /** FLASHPAY_PAY_TIMEOUT_MS: every provider's timeout when set; else each provider's default. */
  payTimeoutMs?: number | undefined;
  providers: Pick<ProviderConfig, 'provider' | 'tenants'>;
}

/** The call timeout of one provider: the override when set, else the provider's default. */
export function payTimeoutOf(config: PayTimeoutSettings, provider: ProviderName): number {
  return config.payTimeoutMs ?? DEFAULT_PAY_TIMEOUT_MS[provider];
}

/** The longest call timeout of any provider some tenant pays through (how long a PAYING order may be in its call). */
export function longestPayTimeoutMs(config: PayTimeoutSettings): number {
  return Math.max(...providersInUse(config.providers).map((name) => payTimeoutOf(config, name)));
}

/** Every currency of a provider without a limit of its own. */
const ANY_CURRENCY = '*';

/**
 * The largest amount one charge may have at each provider, per currency (lower-case ISO code), in
 * minor units; an order whose total is more is refused at creation (400 AMOUNT_TOO_LARGE), before
 * anything is held. The fake channel refuses more than 10^12 (MAX_ORDER_AMOUNT_MINOR, also the
 * database's CHECK of every order, migration 152). Stripe: "Amount must be no more than
 * $999,999.99" — eight digits of minor units, the same eight digits in most currencies (a few, such
 * as IDR, allow more at Stripe; flashpay holds them to eight: refusing what Stripe would take is
 * safe, the other way is an order nobody can pay). Alipay: total_amount at most 100,000,000.00
 * CNY = 10^10 fen (face-to-face pay is in CNY only).
 */
export const MAX_CHARGE_MINOR: Readonly<Record<ProviderName, Readonly<Record<string, number>>>> = {
  fake: { [ANY_CURRENCY]: MAX_ORDER_AMOUNT_MINOR },
  stripe: { [ANY_CURRENCY]: 99_999_999 },
  alipay: { cny: 10_000_000_000 },
};

/** The currency a provider charges in: Stripe's STRIPE_CURRENCY, Alipay's CNY; the fake channel has none. */
function currencyOf(config: Pick<ProviderConfig, 'stripe'>, provider: ProviderName): string {
  if (provider === 'stripe') return config.stripe.currency;
  return provider === 'alipay' ? 'cny' : ANY_CURRENCY;
}

/** The largest charge of a provider in its configured currency (never above the database's bound). */
export function maxChargeOf(config: Pick<ProviderConfig, 'stripe'>, provider: ProviderName): number {
  const limits = MAX_CHARGE_MINOR[provider];
  const limit = limits[currencyOf(config, provider)] ?? limits[ANY_CURRENCY] ?? MAX_ORDER_AMOUNT_MINOR;
  return Math.min(limit, MAX_ORDER_AMOUNT_MINOR);
}

/** The largest order total a tenant may place: its provider's maximum in its currency. A few property reads. */
export function maxOrderAmountOf(
  config: Pick<ProviderConfig, 'provider' | 'tenants' | 'stripe'>,
  tenantId: string,
): number {
  return maxChargeOf(config, providerOfTenant(config, tenantId));
}

export interface ProviderConfig {
  /** FLASHPAY_PROVIDER: every tenant's provider unless overridden. */
  provider: ProviderName;
  /** FLASHPAY_PROVIDER_TENANTS=acme:stripe,globex:alipay: per-tenant overrides. */
  tenants: Record<string, ProviderName>;
  stripe: StripeSettings;
  alipay: AlipaySettings;
  /** Per provider; FLASHPAY_STATUS_SYNC_<PROVIDER>='{"retry_base_ms":…,"max_backoff_ms":…,"close_pending_after_ms":…,"not_found_final_after_ms":…}'. */
  statusSync: Record<ProviderName, StatusSync>;
}

function providerName(raw: string, what: string): ProviderName {
  if ((PROVIDERS as readonly string[]).includes(raw)) return raw as ProviderName;
  throw new Error(`${what} must be one of ${PROVIDERS.join(', ')}, got "${raw}"`);
}

function tenantOverrides(raw: string | undefined): Record<string, ProviderName> {
  const overrides: Record<string, ProviderName> = {};
  for (const entry of (raw ?? '').split(',').map((e) => e.trim())) {
    if (!entry) continue;
    const [tenant, name, ...rest] = entry.split(':');
    if (!tenant || !name || rest.length > 0)
      throw new Error(`FLASHPAY_PROVIDER_TENANTS entries are tenant:provider, got "${entry}"`);
    overrides[tenant] = providerName(name, `FLASHPAY_PROVIDER_TENANTS (${tenant})`);
  }
  return overrides;
}

function statusSync(env: NodeJS.ProcessEnv, name: ProviderName): StatusSync {
  const variable = `FLASHPAY_STATUS_SYNC_${name.toUpperCase()}`;
  const raw = env[variable];
  const defaults = DEFAULT_STATUS_SYNC[name];
  if (!raw) return { ...defaults };
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    throw new Error(`${variable} must be a JSON object`);
  }
  const ms = (key: string, fallback: number) => {
    const value = parsed[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
      throw new Error(`${variable}.${key} must be a non-negative integer of milliseconds`);
    return value;
  };
  const known = ['retry_base_ms', 'max_backoff_ms', 'close_pending_after_ms', 'not_found_final_after_ms'];
  const unknown = Object.keys(parsed).filter((k) => !known.includes(k));
  if (unknown.length > 0)
    throw new Error(`${variable}: unknown keys ${unknown.join(', ')} (known: ${known.join(', ')})`);
  return {
    retryBaseMs: ms('retry_base_ms', defaults.retryBaseMs),
    maxBackoffMs: ms('max_backoff_ms', defaults.maxBackoffMs),
    closePendingAfterMs: ms('close_pending_after_ms', defaults.closePendingAfterMs),
    notFoundFinalAfterMs: ms('not_found_final_after_ms', defaults.notFoundFinalAfterMs),
  };
}

const blank = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);

export function providerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ProviderConfig {
  return {
    provider: providerName(env.FLASHPAY_PROVIDER || 'fake', 'FLASHPAY_PROVIDER'),
    tenants: tenantOverrides(env.FLASHPAY_PROVIDER_TENANTS),
    stripe: {
      secretKey: blank(env.STRIPE_SECRET_KEY),
      webhookSecret: blank(env.STRIPE_WEBHOOK_SECRET),
      apiBase: blank(env.STRIPE_API_BASE),
      currency: (blank(env.STRIPE_CURRENCY) ?? 'usd').toLowerCase(),
    },
    alipay: {
      appId: blank(env.ALIPAY_APP_ID),
      privateKey: blank(env.ALIPAY_PRIVATE_KEY),
      publicKey: blank(env.ALIPAY_PUBLIC_KEY),
      gateway: blank(env.ALIPAY_GATEWAY),
    },
    statusSync: {
      fake: statusSync(env, 'fake'),
      stripe: statusSync(env, 'stripe'),
      alipay: statusSync(env, 'alipay'),
    },
  };
}

/** The provider a tenant pays through. */
export function providerOfTenant(config: Pick<ProviderConfig, 'provider' | 'tenants'>, tenantId: string): ProviderName {
  return config.tenants[tenantId] ?? config.provider;
}

/** Every provider some tenant pays through: the default and each override. */
export function providersInUse(config: Pick<ProviderConfig, 'provider' | 'tenants'>): ProviderName[] {
  return [...new Set<ProviderName>([config.provider, ...Object.values(config.tenants)])];
}

/**
 * The providers a stack builds adapters for (issue 48): every provider in use, and Stripe or Alipay
 * whenever their credentials are set, so a tenant that moved away from one still has its earlier
 * orders queried, refunded and reconciled there. The fake channel only while some tenant uses it.
 */
export function providersWithAdapters(config: ProviderConfig): ProviderName[] {
  const names = new Set(providersInUse(config));
  if (config.stripe.secretKey) names.add('stripe');
  if (config.alipay.appId && config.alipay.privateKey) names.add('alipay');
  return [...names];
}

/**
 * The start banner's line (issue 48): which provider each tenant's money goes to, so a person who
 * switches FLASHPAY_PROVIDER on a data directory sees it. `stripe for every tenant` or
 * `fake for every other tenant; acme → stripe, globex → alipay`.
 */
export function providersBanner(config: ProviderConfig): string {
  const overrides = Object.entries(config.tenants).sort(([a], [b]) => a.localeCompare(b));
  if (overrides.length === 0) return `${config.provider} for every tenant`;
  return `${config.provider} for every other tenant; ${overrides.map(([t, p]) => `${t} → ${p}`).join(', ')}`;
}
