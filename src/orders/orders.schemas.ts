import { Type, type Static } from 'typebox';
import {
  ADMIN_AUTH,
  BODY_ERRORS,
  BUYER_AUTH,
  HEADERS,
  IDEMPOTENCY_KEY_HEADER,
  jsonAnswer,
  nullable,
  problemAnswers,
  stringEnum,
} from '../platform/openapi.ts';
import { PARAM_ERRORS, type Covers } from '../platform/openapi.ts';
import type { orderView } from './orders.service.ts';
import { MAX_LINES } from './orders.lines.ts';
import { MAX_ORDER_AMOUNT_MINOR } from '../platform/money.ts';
import { ORDER_STATUSES } from './decide/states.ts';
import { AT_EXAMPLE, createdExample, ORDER_ID_EXAMPLE, PAID_ORDER_EXAMPLE, queuedExample } from './orders.examples.ts';

// A flash sale sells a handful of units per buyer; anything near 10^9 is a client bug.
export const MAX_QUANTITY = 1000;

export const OrderStatusSchema = stringEnum(ORDER_STATUSES, { description: 'see docs/state-machine.md' });

export const OrderIdParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64, description: 'the order id', examples: [ORDER_ID_EXAMPLE] }),
});
export type OrderIdParams = Static<typeof OrderIdParams>;

const Sku = Type.String({ minLength: 1, maxLength: 64, description: 'the SKU to buy' });
const Quantity = Type.Integer({ minimum: 1, maximum: MAX_QUANTITY, description: 'units (default 1)' });

/** `{sku, quantity?}` (one line) or `{lines: [{sku, quantity?}, …]}` (1..20 lines, distinct SKUs). */
export const CreateOrderBody = Type.Object(
  {
    sku: Type.Optional(Sku),
    quantity: Type.Optional(Quantity),
    lines: Type.Optional(
      Type.Array(Type.Object({ sku: Sku, quantity: Type.Optional(Quantity) }, { additionalProperties: false }), {
        minItems: 1,
        maxItems: MAX_LINES,
        description: 'several SKUs in one order: all are held or none (distinct SKUs)',
      }),
    ),
  },
  {
    additionalProperties: false,
    // Either form, never both (the empty property schemas only name what `required` refers to).
    oneOf: [
      { required: ['sku'], properties: { sku: {} }, not: { required: ['lines'], properties: { lines: {} } } },
      {
        required: ['lines'],
        properties: { lines: {} },
        not: {
          anyOf: [
            { required: ['sku'], properties: { sku: {} } },
            { required: ['quantity'], properties: { quantity: {} } },
          ],
        },
      },
    ],
    examples: [{ sku: 'tee-black-m', quantity: 1 }],
  },
);
export type CreateOrderBody = Static<typeof CreateOrderBody>;

const LineView = Type.Object(
  {
    sku: Type.String(),
    name: Type.String(),
    unit_price: Type.Integer(),
    quantity: Type.Integer(),
    amount: Type.Integer(),
  },
  { additionalProperties: false, description: 'name and unit price as they were when the order was created' },
);

export const CreatedOrder = Type.Object(
  {
    order_id: Type.String(),
    status: OrderStatusSchema,
    sku: Type.String(),
    quantity: Type.Integer(),
    amount: Type.Integer({
      maximum: MAX_ORDER_AMOUNT_MINOR,
      description:
        'price × quantity in minor units (the sum of the lines), fixed at creation; at most the provider’s limit',
    }),
    reservation: Type.Object({
      key: Type.String(),
      status: Type.String({ description: '`HELD`' }),
      expires_at: Type.String({ format: 'date-time' }),
    }),
    lines: Type.Array(LineView),
    reservations: Type.Array(
      Type.Object(
        {
          sku: Type.String(),
          key: Type.String(),
          status: Type.String(),
          expires_at: Type.String({ format: 'date-time' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** 202: recorded, not yet reserved (seed 004): the stock service answers later; poll the order. */
export const QueuedOrder = Type.Object(
  {
    order_id: Type.String(),
    status: OrderStatusSchema,
    sku: Type.String(),
    quantity: Type.Integer(),
    amount: Type.Integer(),
    lines: Type.Array(LineView),
  },
  { additionalProperties: false },
);

export const OrderView = Type.Object(
  {
    order_id: Type.String(),
    status: OrderStatusSchema,
    version: Type.Integer({ description: 'grows by one with every transition' }),
    sku: Type.String(),
    quantity: Type.Integer(),
    amount: Type.Integer(),
    reservation: Type.Object({
      key: Type.String(),
      status: nullable(
        Type.String({
          description:
            '`HELD`, `CONFIRMED`, `RELEASED` or `REFUNDED_SHIPPED` (refunded after its units shipped: out of stock until returned, issue 48)',
        }),
      ),
      expires_at: nullable(Type.String({ format: 'date-time' })),
    }),
    lines: Type.Array(LineView),
    reservations: Type.Array(
      Type.Object(
        { sku: Type.String(), key: Type.String(), status: nullable(Type.String()) },
        { additionalProperties: false },
      ),
    ),
    fulfilment: Type.Object(
      {
        status: stringEnum(['PENDING', 'FULFILLED', 'REFUSED'] as const, {
          description: 'fulfilment is its own dimension (seed 002, docs/saga.md): a FULFILLED order stays PAID',
        }),
        ref: Type.Optional(Type.String({ description: "the fulfilment provider's reference, once fulfilled" })),
      },
      { additionalProperties: false },
    ),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

// Fails to compile when the order view and its schema drift apart (see Covers).
const sameShape: Covers<Static<typeof OrderView>, Awaited<ReturnType<typeof orderView>>> = true;
void sameShape;

export const TimelineEntrySchema = Type.Object(
  {
    from: nullable(OrderStatusSchema),
    to: OrderStatusSchema,
    version: Type.Integer(),
    reason: Type.String(),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const keyed = { 'Idempotent-Replayed': HEADERS.replayed };

export const createOrderSchema = {
  operationId: 'createOrder',
  summary: 'Create an order (reserve stock)',
  description: `Reserves the units and creates the order in one transaction: either both exist or neither. The amount is the price at this moment. An order whose total is more than the tenant's payment provider accepts for one charge in its currency (the fake channel ${MAX_ORDER_AMOUNT_MINOR}, Stripe 99999999, Alipay 10000000000 minor units) is 400 \`AMOUNT_TOO_LARGE\` with \`maximum\`, and nothing is held or written. Requires an \`Idempotency-Key\`; a replay answers exactly as the first time.`,
  tags: ['orders'],
  body: CreateOrderBody,
  docHeaders: IDEMPOTENCY_KEY_HEADER,
  response: {
    201: jsonAnswer('The order, its units held until `reservation.expires_at`', CreatedOrder, {
      headers: { ...keyed, Location: HEADERS.location },
      example: createdExample,
    }),
    202: jsonAnswer(
      'With `Prefer: respond-async` (or FLASHPAY_ORDER_MODE=async): recorded, not yet reserved — PENDING until the stock service answers (CREATED or REJECTED); poll `Location`',
      QueuedOrder,
      {
        headers: { ...keyed, Location: HEADERS.location, 'Preference-Applied': HEADERS.preferenceApplied },
        example: queuedExample,
      },
    ),
    ...problemAnswers(
      [
        ...BODY_ERRORS,
        ...BUYER_AUTH,
        'IDEMPOTENCY_KEY_MISSING',
        'IDEMPOTENCY_KEY_INVALID',
        'AMOUNT_TOO_LARGE',
        'SKU_NOT_FOUND',
        'SOLD_OUT',
        'USER_LIMIT',
        'REQUEST_IN_PROGRESS',
        'IDEMPOTENCY_KEY_REUSED',
      ],
      keyed,
    ),
  },
};

export const getOrderSchema = {
  operationId: 'getOrder',
  summary: 'Read an order',
  description: 'A buyer sees their own orders only: any other id is 404 `ORDER_NOT_FOUND`, never 403.',
  tags: ['orders'],
  params: OrderIdParams,
  response: {
    200: jsonAnswer('The order', OrderView, { example: PAID_ORDER_EXAMPLE }),
    ...problemAnswers([...PARAM_ERRORS, ...BUYER_AUTH, 'ORDER_NOT_FOUND']),
  },
};

export const timelineSchema = {
  operationId: 'getOrderTimeline',
  summary: 'The order’s transitions, oldest first',
  description: 'The first entry has `from: null`, `to: "CREATED"`.',
  tags: ['orders'],
  params: OrderIdParams,
  response: {
    200: jsonAnswer('Every transition', Type.Array(TimelineEntrySchema), {
      example: [
        { from: null, to: 'CREATED', version: 1, reason: 'create', at: AT_EXAMPLE },
        { from: 'CREATED', to: 'PAYING', version: 2, reason: 'pay', at: AT_EXAMPLE },
      ],
    }),
    ...problemAnswers([...PARAM_ERRORS, ...BUYER_AUTH, 'ORDER_NOT_FOUND']),
  },
};

export const CancelledOrder = Type.Object(
  { order_id: Type.String(), status: OrderStatusSchema },
  { additionalProperties: false },
);

export const cancelOrderSchema = {
  operationId: 'cancelOrder',
  summary: 'Cancel an unpaid order',
  description:
    'Releases the held units. Only a `CREATED` order can be cancelled; otherwise 409 `REJECTED` with `order_status`.',
  tags: ['orders'],
  params: OrderIdParams,
  response: {
    200: jsonAnswer('Cancelled', CancelledOrder, { example: { order_id: ORDER_ID_EXAMPLE, status: 'CANCELLED' } }),
    ...problemAnswers([...PARAM_ERRORS, ...BUYER_AUTH, 'ORDER_NOT_FOUND', 'REJECTED']),
  },
};

export const ExpireBody = Type.Object(
  { order_id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false, examples: [{ order_id: ORDER_ID_EXAMPLE }] },
);
export type ExpireBody = Static<typeof ExpireBody>;

export const expireReservationSchema = {
  operationId: 'expireReservation',
  summary: 'End an order’s hold now',
  description:
    'The hold’s expiry is moved to now; the next expiry sweep releases it. `expired: false` when it was no longer HELD.',
  tags: ['admin'],
  body: ExpireBody,
  response: {
    200: jsonAnswer(
      'Whether the hold was ended',
      Type.Object({ expired: Type.Boolean() }, { additionalProperties: false }),
      { example: { expired: true } },
    ),
    ...problemAnswers([...BODY_ERRORS, ...ADMIN_AUTH, 'ORDER_NOT_FOUND']),
  },
};
