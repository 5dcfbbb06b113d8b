import { ORDER_STATUSES } from '../orders/index.ts';
import { Type, type Static } from 'typebox';
import {
  BUYER_AUTH,
  HEADERS,
  IDEMPOTENCY_KEY_HEADER,
  jsonAnswer,
  openapiResponses,
  nullable,
  problemAnswers,
  SIGNATURE_DESCRIPTION,
  stringEnum,
} from '../platform/openapi.ts';
import { PARAM_ERRORS } from '../platform/openapi.ts';
import { EFFECTS, ORDER_ID_EXAMPLE, OrderIdParams } from '../orders/index.ts';

export const NOTIFICATION_KINDS = ['CHARGED', 'DECLINED', 'REFUNDED'] as const;

export const PayAnswer = Type.Object(
  {
    order_id: Type.String(),
    status: stringEnum(ORDER_STATUSES, {
      description:
        '`UNKNOWN`: the provider did not answer in time; the order converges on its own. `RELEASING` (202): a queued order whose wallet was too low, its units going back',
    }),
    next_action: Type.Optional(
      Type.Object(
        {
          type: stringEnum(['REQUIRES_ACTION', 'WAIT_BUYER_PAY'], {
            description:
              '`REQUIRES_ACTION`: Stripe asks the buyer for 3-D Secure — hand `client_secret` to Stripe.js (`handleNextAction`); `WAIT_BUYER_PAY`: Alipay waits for the buyer to confirm on their phone',
          }),
          client_secret: Type.Optional(Type.String({ description: "the PaymentIntent's client secret (Stripe)" })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const keyed = { 'Idempotent-Replayed': HEADERS.replayed };

/** `method` defaults to the provider; `wallet` pays from the buyer's stored balance. The body is optional. */
export const PayBody = nullable(
  Type.Object(
    {
      method: Type.Optional(
        stringEnum(['channel', 'wallet'], {
          description: '`channel` (default): the payment provider; `wallet`: the stored balance',
        }),
      ),
      payment_method: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 255,
          pattern: '^[\\x21-\\x7e]+$',
          description:
            "What the buyer pays with at a real provider, passed through: a Stripe PaymentMethod id (`pm_…`, from Stripe.js), an Alipay buyer's payment code (`auth_code`). Not with `method: wallet`. Part of the request the Idempotency-Key is bound to",
        }),
      ),
    },
    { additionalProperties: false },
  ),
  { examples: [{ method: 'wallet' }] },
);
export type PayBody = Static<typeof PayBody>;

export const payOrderSchema = {
  operationId: 'payOrder',
  summary: 'Pay an order through the payment provider',
  description:
    'Commits PAYING, charges the provider (bounded by `FLASHPAY_PAY_TIMEOUT_MS`, no transaction open), then commits the result. A timeout answers `UNKNOWN`, never `FAILED`: the order converges by query, close or notification. Requires an `Idempotency-Key`; a retry with the same key never charges twice. An order that is not payable: 409 `REJECTED` with `order_status`, and the provider is not called. The body is optional: `method`, and `payment_method` for a real provider (Stripe, Alipay); an `UNKNOWN` may carry `next_action`, what the buyer must still do.',
  tags: ['orders'],
  params: OrderIdParams,
  body: PayBody,
  'x-body-optional': true,
  docHeaders: IDEMPOTENCY_KEY_HEADER,
  response: {
    200: jsonAnswer('The payment’s outcome as known now', PayAnswer, {
      headers: keyed,
      example: { order_id: ORDER_ID_EXAMPLE, status: 'PAID' },
    }),
    202: jsonAnswer(
      'A queued order paid from a wallet whose balance is too low: RELEASING, its units go back through the stock service, then CANCELLED',
      PayAnswer,
      { headers: keyed, example: { order_id: ORDER_ID_EXAMPLE, status: 'RELEASING' } },
    ),
    ...problemAnswers(
      [
        ...PARAM_ERRORS,
        'PAYLOAD_TOO_LARGE',
        ...BUYER_AUTH,
        'IDEMPOTENCY_KEY_MISSING',
        'IDEMPOTENCY_KEY_INVALID',
        'ORDER_NOT_FOUND',
        'REJECTED',
        'INSUFFICIENT_FUNDS',
        'REQUEST_IN_PROGRESS',
        'IDEMPOTENCY_KEY_REUSED',
      ],
      keyed,
    ),
  },
};

/** What the provider POSTs: validated by the handler after the signature, never before. */
export const NotificationBody = Type.Object(
  {
    notify_id: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'unique per notification; a repeat is a DUPLICATE',
    }),
    merchant_order: Type.String({ minLength: 1, maxLength: 128, description: 'the order id' }),
    kind: stringEnum(NOTIFICATION_KINDS),
    amount: Type.Integer({ minimum: 0, description: 'minor units' }),
    txn: Type.Optional(nullable(Type.String({ minLength: 1, maxLength: 128 }))),
  },
  {
    examples: [{ notify_id: 'ntf_41', merchant_order: ORDER_ID_EXAMPLE, kind: 'CHARGED', amount: 1990, txn: 'txn_9' }],
  },
);

export const NotificationAnswer = Type.Object(
  {
    effect: stringEnum(EFFECTS, {
      description:
        'what the notification did to the order. `WRONG_PROVIDER` (from a provider that is not the order’s), `CURRENCY_MISMATCH` (another currency than the provider’s configured one), `PAYMENT_ID_IN_USE` (a provider payment id that settled another order): recorded, the order left as it was, a note for a person',
    }),
    recorded_effect: Type.Optional(
      stringEnum(EFFECTS, {
        description: 'on a copy of a notification recorded before (`effect: DUPLICATE`): what the first copy did',
      }),
    ),
  },
  { additionalProperties: false },
);

const notificationResponses = {
  200: jsonAnswer('Processed and recorded (a duplicate too): the provider stops retrying', NotificationAnswer, {
    example: { effect: 'PAID' },
  }),
  ...problemAnswers(['BAD_SIGNATURE', 'VALIDATION', 'PAYLOAD_TOO_LARGE', 'PROVIDER_NOT_CONFIGURED']),
};

export const notificationSchema = {
  operationId: 'receivePaymentNotification',
  summary: 'Payment notification (provider → service)',
  description: `Sent by the payment provider after a charge, decline or refund; retried until a 200. Signed: ${SIGNATURE_DESCRIPTION} A 500 means nothing was recorded, and the provider retries. The fake channel's route: 404 \`PROVIDER_NOT_CONFIGURED\` when no tenant pays through the fake provider; a notification for an order whose payment is at another provider is answered 200 \`WRONG_PROVIDER\` and changes nothing.`,
  tags: ['provider'],
  security: [{ flashpaySignature: [] }],
  docBody: NotificationBody,
  response: notificationResponses,
};

/** The same exchange as an OpenAPI 3.1 webhook, for integrators who play the provider. */
export const notificationWebhook = {
  post: {
    operationId: 'paymentNotificationWebhook',
    summary: 'Payment notification',
    description: `What the provider double (and any provider adapter) POSTs to \`notify_url\`. ${SIGNATURE_DESCRIPTION}`,
    tags: ['provider'],
    security: [{ flashpaySignature: [] }],
    requestBody: { required: true, content: { 'application/json': { schema: NotificationBody } } },
    responses: openapiResponses(notificationResponses),
  },
};
