// Which payment provider a tenant pays through (issue 37), and the credentials for each. Read from
// the environment only; a credential is never logged, printed or put in an error message.

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

export interface ProviderConfig {
  /** FLASHPAY_PROVIDER: every tenant's provider unless overridden. */
  provider: ProviderName;
  /** FLASHPAY_PROVIDER_TENANTS=acme:stripe,globex:alipay: per-tenant overrides. */
  tenants: Record<string, ProviderName>;
  stripe: StripeSettings;
  alipay: AlipaySettings;
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
  };
}

/** Every provider some tenant pays through: the default and each override. */
export function providersInUse(config: ProviderConfig): ProviderName[] {
  return [...new Set<ProviderName>([config.provider, ...Object.values(config.tenants)])];
}
