import type { FastifyInstance } from 'fastify';
import type Stripe from 'stripe';
import { Type } from 'typebox';
import type { AppDeps } from '../../app.deps.ts';
import { AppError } from '../../platform/errors.ts';
import { jsonAnswer, problemAnswers } from '../../platform/openapi.ts';
import { payTimeoutOf, providersInUse } from '../../platform/provider.config.ts';
import { handleNotification, parseNotification } from '../notifications.ts';
import type { NotificationRecord } from '../payments.repo.ts';
import type { PaymentDeps } from '../payments.deps.ts';
import { NotificationAnswer } from '../payments.schemas.ts';
import { stripeSdk } from './stripe.ts';
import { loadStripe } from './stripe.sdk.ts';
import { WEBHOOK_PATHS } from './webhook-paths.ts';

// Stripe's webhooks (issue 37): verified with the SDK's constructEvent (Stripe-Signature, `t=…,v1=…`,
// 300 s tolerance), deduplicated by the event id (the NotificationRecord's notify_id) and applied
// like any other provider answer. Event types that say nothing about an order's money are answered
// 200 IGNORED and not recorded, so Stripe stops sending them; so are events of PaymentIntents without
// our `metadata.order_id` (another integration on the same Stripe account).

/** Stripe's default: a signature older than this is a replay. */
const TOLERANCE_SECONDS = 300;

const StripeEventBody = Type.Object(
  {
    id: Type.String({ description: 'the event id: a repeat of it is a DUPLICATE' }),
    object: Type.Literal('event'),
    type: Type.String({
      description: '`payment_intent.succeeded`, `payment_intent.payment_failed`, `charge.refunded`',
    }),
    data: Type.Object({ object: Type.Object({}, { additionalProperties: true }) }),
  },
  {
    examples: [
      {
        id: 'evt_1',
        object: 'event',
        type: 'payment_intent.succeeded',
        data: {
          object: { id: 'pi_1', object: 'payment_intent', amount_received: 1990, metadata: { order_id: 'o_1' } },
        },
      },
    ],
  },
);

export const stripeWebhookSchema = {
  operationId: 'receiveStripeWebhook',
  summary: 'Stripe webhook (Stripe → service)',
  description:
    'Stripe’s signed Events for the PaymentIntents flashpay created: `payment_intent.succeeded` (CHARGED, `amount_received`), `payment_intent.payment_failed` (DECLINED), `charge.refunded` (REFUNDED); the order is `metadata.order_id`. Verified with `Stripe-Signature` (`t=<unix seconds>,v1=<hex HMAC-SHA256(STRIPE_WEBHOOK_SECRET, "<t>.<raw body>")>`, at most 300 s old): a bad signature is 400 `BAD_SIGNATURE` and nothing is recorded. An event id seen before is answered `DUPLICATE`; other event types, and events of PaymentIntents without `metadata.order_id`, `IGNORED`, not recorded. 404 `PROVIDER_NOT_CONFIGURED` when no tenant pays through Stripe. An event for an order whose payment is not at Stripe is answered 200 `WRONG_PROVIDER`, one in another currency than `STRIPE_CURRENCY` `CURRENCY_MISMATCH`, one whose PaymentIntent settled another order `PAYMENT_ID_IN_USE`: recorded, a note for a person, the order unchanged.',
  tags: ['provider'],
  security: [],
  docHeaders: Type.Object({
    'stripe-signature': Type.String({ examples: ['t=1733450000,v1=5257a869e7ecebeda32aff…'] }),
  }),
  docBody: StripeEventBody,
  response: {
    200: jsonAnswer('Processed (a duplicate or an ignored type too): Stripe stops retrying', NotificationAnswer, {
      example: { effect: 'PAID' },
    }),
    ...problemAnswers(['BAD_SIGNATURE', 'VALIDATION', 'PAYLOAD_TOO_LARGE', 'PROVIDER_NOT_CONFIGURED']),
  },
};

const KINDS: Record<string, NotificationRecord['kind']> = {
  'payment_intent.succeeded': 'CHARGED',
  'payment_intent.payment_failed': 'DECLINED',
  'charge.refunded': 'REFUNDED',
};

/** The event in flashpay's words, or undefined for a type that is not about an order's money. */
async function recordOf(
  event: Stripe.Event,
  intentOrder: (id: string) => Promise<string>,
): Promise<Omit<NotificationRecord, 'provider'> | undefined> {
  const kind = KINDS[event.type];
  if (!kind) return undefined;
  if (kind === 'REFUNDED') {
    const charge = event.data.object as Stripe.Charge;
    const intent = typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id;
    // Stripe may not have copied the PaymentIntent's metadata onto the Charge: ask the PaymentIntent.
    const order = charge.metadata?.order_id || (intent ? await intentOrder(intent) : '');
    return {
      notifyId: event.id,
      merchantOrder: order,
      kind,
      amount: charge.amount_refunded,
      txn: intent ?? charge.id,
      currency: charge.currency,
    };
  }
  const pi = event.data.object as Stripe.PaymentIntent;
  const amount = kind === 'CHARGED' ? pi.amount_received : pi.amount;
  return {
    notifyId: event.id,
    merchantOrder: pi.metadata?.order_id ?? '',
    kind,
    amount,
    txn: pi.id,
    currency: pi.currency,
  };
}

export function stripeWebhookRoutes(app: FastifyInstance, deps: AppDeps, payments: PaymentDeps): void {
  const settings = deps.config.providers.stripe;
  const inUse = providersInUse(deps.config.providers).includes('stripe');
  let sdk: Promise<Stripe> | undefined;
  const intentOrder = async (id: string) => {
    sdk ??= stripeSdk(settings, payTimeoutOf(deps.config, 'stripe'));
    try {
      return (await (await sdk).paymentIntents.retrieve(id)).metadata.order_id ?? '';
    } catch {
      // Not answered now: a 503 makes Stripe deliver the event again later.
      throw new AppError('UNAVAILABLE', 'the refunded charge’s PaymentIntent could not be read from Stripe');
    }
  };

  app.post(WEBHOOK_PATHS.stripe, { schema: stripeWebhookSchema }, async (request) => {
    if (!inUse || !settings.webhookSecret)
      throw new AppError(
        'PROVIDER_NOT_CONFIGURED',
        'no tenant pays through stripe here (or STRIPE_WEBHOOK_SECRET is unset)',
      );
    const header = request.headers['stripe-signature'];
    let event: Stripe.Event;
    try {
      event = (await loadStripe()).webhooks.constructEvent(
        request.rawBody ?? '',
        typeof header === 'string' ? header : '',
        settings.webhookSecret,
        TOLERANCE_SECONDS,
      );
    } catch (error) {
      // The SDK's message names what failed (no signature, too old, no match), never the secret.
      throw new AppError('BAD_SIGNATURE', (error as Error).message.split('\n')[0] ?? 'signature does not match');
    }
    const record = await recordOf(event, intentOrder);
    // No metadata.order_id: a PaymentIntent flashpay did not create (another integration on the same
    // account). Not ours to apply, and a 4xx would only make Stripe resend it for days.
    if (!record?.merchantOrder) return { effect: 'IGNORED' };
    // The fake channel's rules for what a notification may carry (ids' length, a safe amount). Its
    // currency is compared with STRIPE_CURRENCY: another currency's amount changes nothing (issue 48).
    const parsed = parseNotification(
      {
        notify_id: record.notifyId,
        merchant_order: record.merchantOrder,
        kind: record.kind,
        amount: record.amount,
        txn: record.txn,
      },
      'stripe',
    );
    return handleNotification(payments, {
      ...parsed,
      ...(typeof record.currency === 'string' ? { currency: record.currency } : {}),
    });
  });
}
