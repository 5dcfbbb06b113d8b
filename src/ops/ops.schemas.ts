import { Type } from 'typebox';
import {
  ADMIN_AUTH,
  BODY_ERRORS,
  HEADERS,
  IDEMPOTENCY_KEY_HEADER,
  jsonAnswer,
  nullable,
  PARAM_ERRORS,
  problemAnswers,
  stringEnum,
} from '../platform/openapi.ts';
import {
  AT_EXAMPLE,
  ORDER_ID_EXAMPLE,
  ORDER_STATUSES,
  OrderIdParams,
  OrderStatusSchema,
  SEARCH_PAGE_DEFAULT,
  SEARCH_PAGE_MAX,
} from '../orders/index.ts';
import { ReasonBody } from '../platform/reason.ts';

// The operator console's API (issue 36, docs/web.md), declared like every other route (docs/api.md).

const CURSOR_EXAMPLE = 'MjAyNi0wMS0wMVQxMjowMDowMC4wMDAwMDBafG9yZF84ZjNhOWMwMWQ0ZTI3YjZhNTUxMA';

export const SearchQuery = Type.Object(
  {
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'an order id, a buyer (user id), an Idempotency-Key or a provider transaction id, matched exactly',
      }),
    ),
    state: Type.Optional(stringEnum(ORDER_STATUSES, { description: 'only orders in this status' })),
    status: Type.Optional(stringEnum(ORDER_STATUSES, { description: 'the same as `state` (kept for issue 15)' })),
    sku: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'orders with a line of this SKU' })),
    limit: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,2}$',
        description: `page size, 1..${SEARCH_PAGE_MAX} (default ${SEARCH_PAGE_DEFAULT})`,
        examples: ['25'],
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        pattern: '^[A-Za-z0-9_-]+$',
        description: "the previous page's `next_cursor`",
      }),
    ),
  },
  { additionalProperties: false },
);

const FoundOrderSchema = Type.Object(
  {
    order_id: Type.String(),
    tenant_id: Type.String(),
    user_id: Type.String(),
    status: OrderStatusSchema,
    sku: Type.String({ description: 'the first line’s SKU' }),
    quantity: Type.Integer(),
    amount: Type.Integer({ description: 'minor units' }),
    attention: nullable(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

export const searchOrdersSchema = {
  operationId: 'adminListOrders',
  summary: 'Search orders, newest first, a page at a time (operations console)',
  description:
    "The token's tenant (every tenant for an operator). Keyset-paged on (created_at, order_id): pass `next_cursor` as `cursor` for the next page; `null` on the last page. A malformed cursor: 400 `VALIDATION`.",
  tags: ['admin'],
  querystring: SearchQuery,
  response: {
    200: jsonAnswer(
      'A page of orders',
      Type.Object(
        {
          orders: Type.Array(FoundOrderSchema),
          next_cursor: nullable(Type.String({ description: 'the cursor of the next page' })),
        },
        { additionalProperties: false },
      ),
      {
        example: {
          orders: [
            {
              order_id: ORDER_ID_EXAMPLE,
              tenant_id: 'acme',
              user_id: 'alice',
              status: 'PAID',
              sku: 'tee-black-m',
              quantity: 1,
              amount: 1990,
              attention: null,
              created_at: AT_EXAMPLE,
              updated_at: AT_EXAMPLE,
            },
          ],
          next_cursor: CURSOR_EXAMPLE,
        },
      },
    ),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH]),
  },
};

const keyed = { 'Idempotent-Replayed': HEADERS.replayed };
const ActionAnswer = Type.Object(
  { order_id: Type.String(), status: OrderStatusSchema, operator: Type.String({ description: "the operator's sub" }) },
  { additionalProperties: false },
);
const KEYED_REFUSALS = [
  ...PARAM_ERRORS,
  ...BODY_ERRORS,
  ...ADMIN_AUTH,
  'IDEMPOTENCY_KEY_MISSING',
  'IDEMPOTENCY_KEY_INVALID',
  'ORDER_NOT_FOUND',
  'REJECTED',
  'REQUEST_IN_PROGRESS',
  'IDEMPOTENCY_KEY_REUSED',
] as const;

export const refundOrderSchema = {
  operationId: 'adminRefundOrder',
  summary: 'Refund a PAID order through the provider (operator)',
  description:
    'PAID → REFUNDING (its units back on sale — unless the order\'s fulfilment is `FULFILLED`: shipped units have left, they stay out of stock and the SKU counts them `refunded_shipped` until `POST /v1/admin/orders/{id}/return` — the operator recorded in the timeline) → the provider\'s refund with the order\'s fixed refund key → REFUNDED. Answers the status once the provider answered (`REFUNDING` while its answer is pending: recovery re-sends the same refund). Any other status: 409 `REJECTED` with `order_status`, and the provider is not called. Requires an `Idempotency-Key` and a body `{"reason": "…"}` (1–500 characters; without it 400 `VALIDATION` naming `body.reason`, nothing changes): the reason, the operator\'s tenant and `sub` and the time go to the append-only audit trail, shown in the admin order view. Another admin sending the same key makes their own request (keys are per operator), never a replay of this one.',
  tags: ['admin'],
  params: OrderIdParams,
  body: ReasonBody,
  docHeaders: IDEMPOTENCY_KEY_HEADER,
  response: {
    200: jsonAnswer('The order after the refund', ActionAnswer, {
      headers: keyed,
      example: { order_id: ORDER_ID_EXAMPLE, status: 'REFUNDED', operator: 'ops-anna' },
    }),
    ...problemAnswers(KEYED_REFUSALS, keyed),
  },
};

export const cancelOrderAdminSchema = {
  operationId: 'adminCancelOrder',
  summary: 'Cancel an unpaid order (operator)',
  description:
    'CREATED → CANCELLED, its held units back on sale in the same transaction, the operator recorded in the timeline. Any other status (a pay under way, paid, finished): 409 `REJECTED` with `order_status`. Requires an `Idempotency-Key` and a body `{"reason": "…"}` (1–500 characters; without it 400 `VALIDATION` naming `body.reason`, nothing changes): the reason, the operator\'s tenant and `sub` and the time go to the append-only audit trail.',
  tags: ['admin'],
  params: OrderIdParams,
  body: ReasonBody,
  docHeaders: IDEMPOTENCY_KEY_HEADER,
  response: {
    200: jsonAnswer('The cancelled order', ActionAnswer, {
      headers: keyed,
      example: { order_id: ORDER_ID_EXAMPLE, status: 'CANCELLED', operator: 'ops-anna' },
    }),
    ...problemAnswers(KEYED_REFUSALS, keyed),
  },
};

export const returnOrderSchema = {
  operationId: 'adminReturnOrder',
  summary: 'Return the units of an order refunded after shipping to stock (operator)',
  description:
    'Issue 48. A refund of an order whose fulfilment is `FULFILLED` leaves its units out of stock (the SKU counts them `refunded_shipped`): they have left the warehouse. When they come back, this puts them on sale again (`refunded_shipped` − q, `available` + q), with the operator, their tenant and the reason in the append-only audit trail; the order keeps its status (`REFUNDING` or `REFUNDED`). Once per order: an order with no unit refunded after shipping (not refunded, never shipped, or returned already) is 409 `REJECTED` with `order_status`, and nothing moves. Requires an `Idempotency-Key` and a body `{"reason": "…"}` (1–500 characters; without it 400 `VALIDATION` naming `body.reason`).',
  tags: ['admin'],
  params: OrderIdParams,
  body: ReasonBody,
  docHeaders: IDEMPOTENCY_KEY_HEADER,
  response: {
    200: jsonAnswer('The order whose units are back on sale', ActionAnswer, {
      headers: keyed,
      example: { order_id: ORDER_ID_EXAMPLE, status: 'REFUNDED', operator: 'ops-anna' },
    }),
    ...problemAnswers(KEYED_REFUSALS, keyed),
  },
};

export const ackAttentionSchema = {
  operationId: 'adminAckAttention',
  summary: 'Acknowledge the note for a person on an order',
  description:
    'Records who acknowledged the note and when (also in the timeline); the order leaves `GET /v1/admin/attention` until a new problem is noted. Repeating it changes nothing and answers the first acknowledgement. An order without a note: 409 `REJECTED`.',
  tags: ['admin'],
  params: OrderIdParams,
  response: {
    200: jsonAnswer(
      'The acknowledgement',
      Type.Object(
        {
          order_id: Type.String(),
          status: OrderStatusSchema,
          attention: Type.String(),
          acknowledged_by: Type.String(),
          acknowledged_at: Type.String({ format: 'date-time' }),
        },
        { additionalProperties: false },
      ),
      {
        example: {
          order_id: ORDER_ID_EXAMPLE,
          status: 'UNKNOWN',
          attention: 'cannot converge after 10 attempts: query ERROR_500',
          acknowledged_by: 'ops-anna',
          acknowledged_at: AT_EXAMPLE,
        },
      },
    ),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH, 'ORDER_NOT_FOUND', 'REJECTED']),
  },
};

export const resolveOrderSchema = {
  operationId: 'adminResolveOrder',
  summary: 'Resolve an UNKNOWN order by hand, with a receipt (operator)',
  description:
    "For an order the provider cannot be asked about: the operator's finding (`CHARGED` → PAID, units confirmed; `NOT_CHARGED` → FAILED, units released) applied as a query's answer would be, the receipt and the operator in the transition's reason and the timeline. Reconciliation still judges the order against the provider's statement. Any status but UNKNOWN: 409 `REJECTED` with `order_status`. Requires an `Idempotency-Key`.",
  tags: ['admin'],
  params: OrderIdParams,
  body: Type.Object(
    {
      outcome: stringEnum(['CHARGED', 'NOT_CHARGED'] as const),
      receipt: Type.String({
        minLength: 1,
        maxLength: 200,
        pattern: '^[\\x20-\\x7e]+$',
        description: "the provider's reference the operator found (a dashboard's transaction id, a ticket)",
      }),
    },
    { additionalProperties: false, examples: [{ outcome: 'CHARGED', receipt: 'txn_5d79df0b from the dashboard' }] },
  ),
  docHeaders: IDEMPOTENCY_KEY_HEADER,
  response: {
    200: jsonAnswer('The order after the resolution', ActionAnswer, {
      headers: keyed,
      example: { order_id: ORDER_ID_EXAMPLE, status: 'PAID', operator: 'ops-anna' },
    }),
    ...problemAnswers([...KEYED_REFUSALS, ...BODY_ERRORS], keyed),
  },
};
