import type { Dialect } from '../../../src/channel/index.ts';
import type { Config } from '../../../src/platform/config.ts';
import { signPayload } from '../../../src/platform/signature.ts';
import { TEST_NOTIFY_SECRET, type HttpResult, type Stack } from '../stack.ts';

// The provider a payment test runs against (issue 37): the fake channel, or a real provider's
// adapter (its official SDK) against that provider's local double. The double is the fake
// channel's ledger and faults in the provider's words, so a test scripts every provider alike
// through `/_control` and asserts the same business outcomes.

export const TEST_PROVIDERS = ['fake', 'stripe', 'alipay'] as const;
export type TestProvider = (typeof TEST_PROVIDERS)[number];

/**
 * The pay timeout of the tests that lose replies on purpose (a charge delayed past it is UNKNOWN),
 * pinned for every provider: the fake channel's default. Stripe's and Alipay's own (10 s,
 * DEFAULT_PAY_TIMEOUT_MS) would turn each planned lost reply into a 10 s wait, or into no loss.
 */
export const LOST_REPLY_TIMEOUT_MS = 300;

export interface NotifyOptions {
  /** Signs with another secret or key than the stack's: a forgery. */
  forged?: boolean;
  /** The signature's time, seconds since the epoch (a stale signature). */
  at?: number;
}

export interface ProviderHarness {
  name: TestProvider;
  /** The double's wire format; none for the fake channel. */
  dialect?: Dialect;
  /** The stack's configuration once the double listens at `doubleUrl`. */
  config(doubleUrl: string): Partial<Config>;
  /** After the stack listens (Stripe: its webhook endpoint is registered with the double). */
  connect?(doubleUrl: string, apiUrl: string): Promise<void>;
  /** Posts a notification ({notify_id, merchant_order, kind, amount, txn}) to the stack in the provider's words. */
  notify(stack: Stack, body: Record<string, unknown>, options?: NotifyOptions): Promise<HttpResult>;
}

const fake: ProviderHarness = {
  name: 'fake',
  config: () => ({}),
  notify(stack, body, options = {}) {
    const raw = JSON.stringify(body);
    const secret = options.forged ? 'forged-secret-forged-secret-forged' : TEST_NOTIFY_SECRET;
    const signature = signPayload(secret, raw, options.at ?? Math.floor(Date.now() / 1000));
    return stack.call('POST', '/v1/payment-notifications', {
      rawBody: raw,
      headers: { 'flashpay-signature': signature },
    });
  },
};

/** The provider of this run: FLASHPAY_TEST_PROVIDER, else the fake channel. */
export function defaultTestProvider(): TestProvider {
  const name = process.env.FLASHPAY_TEST_PROVIDER ?? 'fake';
  if (!(TEST_PROVIDERS as readonly string[]).includes(name))
    throw new Error(`FLASHPAY_TEST_PROVIDER must be one of ${TEST_PROVIDERS.join(', ')}`);
  return name as TestProvider;
}

/**
 * The providers a provider-agnostic payment test runs against: all of them, or the one named by
 * FLASHPAY_TEST_PROVIDER (to chase one provider's failure alone).
 */
export function providersUnderTest(): TestProvider[] {
  return process.env.FLASHPAY_TEST_PROVIDER ? [defaultTestProvider()] : [...TEST_PROVIDERS];
}

export async function providerHarness(name: TestProvider): Promise<ProviderHarness> {
  if (name === 'fake') return fake;
  // Each provider's harness lives beside its double's tests (tests/support/providers/<name>.ts).
  const file = new URL(`./${name}.ts`, import.meta.url).href;
  const module = (await import(/* @vite-ignore */ file)) as { harness: () => Promise<ProviderHarness> };
  return module.harness();
}
