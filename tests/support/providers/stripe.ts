import Stripe from 'stripe';
import { stripeDialect, stripeEvent, stripeSignature } from '../../../src/channel/dialects/stripe.ts';
import { loadConfig } from '../../../src/platform/config.ts';
import type { NotifyKind } from '../../../src/channel/index.ts';
import type { ProviderHarness } from './index.ts';

// Stripe through the official SDK against the Stripe double. Test-only credentials: the double
// accepts nothing else, and no real Stripe account has them.
export const TEST_STRIPE_SECRET_KEY = 'sk_test_flashpay_double_only_not_a_real_key';
export const TEST_STRIPE_WEBHOOK_SECRET = 'whsec_test_flashpay_double_only_not_a_real_secret';
const FORGED_WEBHOOK_SECRET = 'whsec_test_forged_forged_forged_forged';
export const TEST_STRIPE_CURRENCY = 'usd';

/** The SDK as flashpay's adapter builds it, pointed at a double (for tests that script Stripe directly). */
export function testStripeSdk(doubleUrl: string): Stripe {
  const base = new URL(doubleUrl);
  return new Stripe(TEST_STRIPE_SECRET_KEY, {
    host: base.hostname,
    port: base.port,
    protocol: 'http',
    maxNetworkRetries: 0,
    telemetry: false,
  });
}

export async function harness(): Promise<ProviderHarness> {
  return {
    name: 'stripe',
    dialect: stripeDialect({ webhookSecret: TEST_STRIPE_WEBHOOK_SECRET, apiKey: TEST_STRIPE_SECRET_KEY }),
    config: (doubleUrl) => ({
      providers: {
        ...loadConfig({}).providers,
        provider: 'stripe',
        stripe: {
          secretKey: TEST_STRIPE_SECRET_KEY,
          webhookSecret: TEST_STRIPE_WEBHOOK_SECRET,
          apiBase: doubleUrl,
          currency: TEST_STRIPE_CURRENCY,
        },
      },
    }),
    async connect(doubleUrl, apiUrl) {
      await testStripeSdk(doubleUrl).webhookEndpoints.create({
        url: `${apiUrl}/v1/providers/stripe/webhook`,
        enabled_events: ['payment_intent.succeeded', 'payment_intent.payment_failed', 'charge.refunded'],
      });
    },
    // The event the double would send for this notification, signed as Stripe signs it.
    notify(stack, body, options = {}) {
      const event = stripeEvent(
        {
          notifyId: String(body.notify_id),
          kind: body.kind as NotifyKind,
          merchantOrder: String(body.merchant_order),
          amount: Number(body.amount),
          txn: String(body.txn ?? ''),
        },
        TEST_STRIPE_CURRENCY,
        TEST_STRIPE_WEBHOOK_SECRET,
      );
      const raw = JSON.stringify(event);
      const secret = options.forged ? FORGED_WEBHOOK_SECRET : TEST_STRIPE_WEBHOOK_SECRET;
      const signature = stripeSignature(secret, raw, options.at ?? Math.floor(Date.now() / 1000));
      return stack.call('POST', '/v1/providers/stripe/webhook', {
        rawBody: raw,
        headers: { 'stripe-signature': signature },
      });
    },
  };
}
