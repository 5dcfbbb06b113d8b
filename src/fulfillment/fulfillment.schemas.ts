import { Type } from 'typebox';
import {
  ADMIN_AUTH,
  jsonAnswer,
  openapiResponses,
  problemAnswers,
  SIGNATURE_DESCRIPTION,
  stringEnum,
} from '../platform/openapi.ts';
import { PARAM_ERRORS } from '../platform/openapi.ts';
import { EVENT_TYPES } from '../outbox/index.ts';
import { EFFECTS } from './fulfillment.repo.ts';

const AT_EXAMPLE = '2026-11-30T18:00:00.000Z';

// An order has at most 20 lines (the contract's limit).
const MAX_EVENT_LINES = 20;

/** One line of an order event: the snapshot taken when the order was placed. */
const OrderEventLine = Type.Object(
  {
    sku: Type.String({ minLength: 1, maxLength: 64 }),
    name: Type.String({ minLength: 1, maxLength: 200, description: 'the SKU’s name when the order was placed' }),
    quantity: Type.Integer({ minimum: 1 }),
    unit_price: Type.Integer({ minimum: 0, description: 'minor units, the price when the order was placed' }),
  },
  { additionalProperties: true },
);

/**
 * The event's payload (issue 38): the order at that version with every line. Fields are optional
 * on the wire so events written before a field existed still validate; flashpay writes all of
 * them, `sku` and `quantity` only for an order of one line.
 */
const OrderEventPayload = Type.Object(
  {
    order_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    tenant_id: Type.Optional(Type.String({ minLength: 1 })),
    user_id: Type.Optional(Type.String({ minLength: 1 })),
    status: Type.Optional(Type.String({ description: 'the order’s status after the transition' })),
    version: Type.Optional(Type.Integer({ minimum: 1 })),
    amount: Type.Optional(Type.Integer({ minimum: 0, description: 'minor units: the sum of the lines' })),
    lines: Type.Optional(
      Type.Array(OrderEventLine, {
        minItems: 1,
        maxItems: MAX_EVENT_LINES,
        description: 'every line of the order, in line (SKU) order: a consumer ships or counts each',
      }),
    ),
    sku: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'an order of one line only: its SKU (= lines[0].sku)' }),
    ),
    quantity: Type.Optional(
      Type.Integer({ minimum: 1, description: 'an order of one line only: its quantity (= lines[0].quantity)' }),
    ),
  },
  { additionalProperties: true, description: 'the transition: the order at that version, with every line' },
);

const EVENT_PAYLOAD_EXAMPLE = {
  order_id: 'ord_7c1e2b9f4a',
  tenant_id: 'acme',
  user_id: 'u-1',
  status: 'PAID',
  version: 3,
  amount: 3980,
  lines: [
    { sku: 'tee-black', name: 'Black tee', quantity: 1, unit_price: 1990 },
    { sku: 'tee-white', name: 'White tee', quantity: 1, unit_price: 1990 },
  ],
};

/** The wire shape of an order event, as the relay's http sink delivers it. */
export const OrderEventBody = Type.Object(
  {
    event_id: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'the dedup key: the same event may arrive more than once',
    }),
    order_id: Type.String({ minLength: 1, maxLength: 64 }),
    event_type: stringEnum(EVENT_TYPES),
    order_version: Type.Integer({
      minimum: 1,
      description: 'the order’s version after the transition; older versions are STALE',
    }),
    payload: OrderEventPayload,
  },
  {
    examples: [
      {
        event_id: '42',
        order_id: 'ord_7c1e2b9f4a',
        event_type: 'ORDER_PAID',
        order_version: 3,
        payload: EVENT_PAYLOAD_EXAMPLE,
      },
    ],
  },
);

const EventAnswer = Type.Object(
  { effect: stringEnum(EFFECTS, { description: 'all three acknowledge the event: the sender stops retrying' }) },
  { additionalProperties: false },
);

const eventResponses = {
  200: jsonAnswer('Durably handled', EventAnswer, { example: { effect: 'APPLIED' } }),
  ...problemAnswers(['BAD_SIGNATURE', 'VALIDATION', 'PAYLOAD_TOO_LARGE']),
};

const eventDescription = `Terminal order events (PAID, FAILED, CANCELLED, REFUNDED), delivered at least once by the outbox relay's http sink; applied exactly once (inbox dedup by \`event_id\`, monotonic \`order_version\`). The payload carries every line of the order (\`lines\`: \`sku\`, \`name\`, \`quantity\`, \`unit_price\` as snapshot when it was placed); an order of one line also has the older \`sku\` and \`quantity\`; an ORDER_PAID event ships every line. The same event travels by JetStream and RabbitMQ. Signed: ${SIGNATURE_DESCRIPTION} A 500 means nothing was recorded; the relay retries with backoff.`;

export const fulfillmentEventSchema = {
  operationId: 'receiveOrderEvent',
  summary: 'Order event (relay → built-in fulfillment consumer)',
  description: eventDescription,
  tags: ['events'],
  security: [{ flashpaySignature: [] }],
  body: OrderEventBody,
  response: eventResponses,
};

/** The same delivery as an OpenAPI 3.1 webhook: what a consumer of the http sink receives. */
export const orderEventWebhook = {
  post: {
    operationId: 'orderEventWebhook',
    summary: 'Order event',
    description: `What the relay's http sink POSTs to its configured URL. ${eventDescription}`,
    tags: ['events'],
    security: [{ flashpaySignature: [] }],
    requestBody: { required: true, content: { 'application/json': { schema: OrderEventBody } } },
    responses: openapiResponses(eventResponses),
  },
};

// A relay's batch: at most its largest claim (MAX_BATCH_SIZE in src/outbox/relay.ts).
export const MAX_EVENTS_PER_BATCH = 500;
// 500 events of up to 20 lines (~8 KB each at the longest names); the route's own limit, above the
// API's default body limit.
export const BATCH_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

const OrderEventBatchBody = Type.Object(
  { events: Type.Array(OrderEventBody, { minItems: 1, maxItems: MAX_EVENTS_PER_BATCH }) },
  {
    additionalProperties: false,
    examples: [
      {
        events: [
          {
            event_id: '42',
            order_id: 'ord_7c1e2b9f4a',
            event_type: 'ORDER_PAID',
            order_version: 3,
            payload: { status: 'PAID', amount: 1990 },
          },
        ],
      },
    ],
  },
);

const BatchOutcome = Type.Object(
  {
    event_id: Type.String(),
    effect: stringEnum([...EFFECTS, 'ERROR'] as const, {
      description:
        'APPLIED, DUPLICATE, STALE acknowledge the event; ERROR means nothing was recorded for it: resend it',
    }),
    detail: Type.Optional(Type.String({ description: 'why, for ERROR' })),
  },
  { additionalProperties: false },
);

const BatchAnswer = Type.Object(
  { results: Type.Array(BatchOutcome, { description: 'one per event, in the order of the request' }) },
  { additionalProperties: false },
);

const batchResponses = {
  200: jsonAnswer('The batch was handled in one transaction; each event has its own outcome', BatchAnswer, {
    example: {
      results: [
        { event_id: '42', effect: 'APPLIED' },
        { event_id: '43', effect: 'DUPLICATE' },
      ],
    },
  }),
  ...problemAnswers(['BAD_SIGNATURE', 'VALIDATION', 'PAYLOAD_TOO_LARGE']),
};

const batchDescription = `A batch of order events (1..${MAX_EVENTS_PER_BATCH}) in one request, applied in one transaction with the guarantees of the single-event webhook for each event: inbox dedup by \`event_id\` (inside the batch and across batches), monotonic \`order_version\`. One event that cannot be applied does not fail the others: it answers \`ERROR\` and is resent. The signature covers the whole body: ${SIGNATURE_DESCRIPTION} A 500 means nothing of the batch was recorded.`;

export const fulfillmentBatchSchema = {
  operationId: 'receiveOrderEventBatch',
  summary: 'A batch of order events (relay → built-in fulfillment consumer)',
  description: batchDescription,
  tags: ['events'],
  security: [{ flashpaySignature: [] }],
  body: OrderEventBatchBody,
  response: batchResponses,
};

const Arrival = Type.Object(
  {
    event_id: Type.String(),
    event_type: Type.String(),
    version: Type.Integer(),
    effect: stringEnum(EFFECTS),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

export const FulfillmentView = Type.Object(
  {
    order_id: Type.String(),
    ship_count: Type.Integer({ description: '1 for a paid order, whatever was redelivered' }),
    last_version: Type.Integer(),
    last_event_type: Type.String(),
    shipped_lines: Type.Union(
      [
        Type.Array(
          Type.Object({ sku: Type.String(), quantity: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
        ),
        Type.Null(),
      ],
      { description: 'every line the ORDER_PAID event shipped; null before one arrived' },
    ),
    arrivals: Type.Array(Arrival),
    failed_arrivals: Type.Integer({ description: 'arrivals whose transaction failed (the sender retried them)' }),
  },
  { additionalProperties: false },
);

export const fulfillmentViewSchema = {
  operationId: 'adminGetFulfillment',
  summary: 'The fulfillment consumer’s view of an order',
  description: '404 `NOT_FOUND` when no event of the order has arrived.',
  tags: ['admin'],
  params: Type.Object({ order_id: Type.String({ minLength: 1, maxLength: 64, examples: ['ord_7c1e2b9f4a'] }) }),
  response: {
    200: jsonAnswer('Every arrival with its effect', FulfillmentView, {
      example: {
        order_id: 'ord_7c1e2b9f4a',
        ship_count: 1,
        last_version: 3,
        last_event_type: 'ORDER_PAID',
        shipped_lines: [
          { sku: 'tee-black', quantity: 1 },
          { sku: 'tee-white', quantity: 1 },
        ],
        arrivals: [
          { event_id: '42', event_type: 'ORDER_PAID', version: 3, effect: 'APPLIED', at: AT_EXAMPLE },
          { event_id: '42', event_type: 'ORDER_PAID', version: 3, effect: 'DUPLICATE', at: AT_EXAMPLE },
        ],
        failed_arrivals: 0,
      },
    }),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH, 'NOT_FOUND']),
  },
};
