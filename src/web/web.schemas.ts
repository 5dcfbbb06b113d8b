import { Type } from 'typebox';
import {
  ADMIN_AUTH,
  BODY_ERRORS,
  BUYER_AUTH,
  jsonAnswer,
  nullable,
  PARAM_ERRORS,
  problemAnswers,
  stringEnum,
} from '../platform/openapi.ts';
import {
  AT_EXAMPLE,
  ORDER_ID_EXAMPLE,
  PAID_ORDER_EXAMPLE,
  OrderStatusSchema,
  OrderView,
  TimelineEntrySchema,
} from '../orders/index.ts';

// The browser pages' routes (issue 15, docs/web.md), declared like every other route (docs/api.md).

const Catalogue = Type.Object(
  {
    skus: Type.Array(
      Type.Object(
        {
          sku: Type.String(),
          name: Type.String(),
          price: Type.Integer({ description: 'minor units' }),
          available: Type.Integer(),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const catalogueSchema = {
  operationId: 'listSkus',
  summary: "The tenant's SKUs for the storefront",
  description: "Every SKU of the token's tenant with its price and the units still available.",
  tags: ['orders'],
  response: {
    200: jsonAnswer('The catalogue', Catalogue, {
      example: { skus: [{ sku: 'tee-black-m', name: 'T-shirt, black, M', price: 1990, available: 42 }] },
    }),
    ...problemAnswers(BUYER_AUTH),
  },
};

const MyOrders = Type.Object(
  {
    orders: Type.Array(
      Type.Object(
        { ...OrderView.properties, timeline: Type.Array(TimelineEntrySchema) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const myOrdersSchema = {
  operationId: 'listMyOrders',
  summary: "The buyer's own newest orders with their timelines",
  description: 'What the storefront rebuilds "my orders" from after a refresh.',
  tags: ['orders'],
  response: {
    200: jsonAnswer('The orders, newest first', MyOrders, {
      example: {
        orders: [
          {
            ...PAID_ORDER_EXAMPLE,
            timeline: [{ from: null, to: 'CREATED', version: 1, reason: 'create', at: AT_EXAMPLE }],
          },
        ],
      },
    }),
    ...problemAnswers(BUYER_AUTH),
  },
};

const ConsoleSummary = Type.Object(
  {
    at: Type.String({ format: 'date-time' }),
    total: Type.Integer(),
    counts: Type.Record(Type.String(), Type.Integer(), { description: 'order count by status' }),
    outbox: Type.Object(
      { pending: Type.Integer(), oldest_pending_ms: Type.Integer(), dead: Type.Integer() },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const consoleSummarySchema = {
  operationId: 'consoleSummary',
  summary: 'Order counts by status and outbox lag (operations console)',
  description: "The token's tenant (every tenant for an operator); the console polls it once a second.",
  tags: ['admin'],
  response: {
    200: jsonAnswer('The summary', ConsoleSummary, {
      example: {
        at: AT_EXAMPLE,
        total: 9,
        counts: { PAID: 7, CANCELLED: 2 },
        outbox: { pending: 0, oldest_pending_ms: 0, dead: 0 },
      },
    }),
    ...problemAnswers(ADMIN_AUTH),
  },
};

export const retryOrderSchema = {
  operationId: 'adminRetryOrder',
  summary: 'Retry now: one recovery pass over this order',
  description: 'Clears the recovery backoff of the order and runs a recovery pass over its tenant at once.',
  tags: ['admin'],
  params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, examples: [ORDER_ID_EXAMPLE] }) }),
  response: {
    200: jsonAnswer(
      'The order after the pass',
      Type.Object(
        { order_id: Type.String(), status: OrderStatusSchema, attention: nullable(Type.String()) },
        { additionalProperties: false },
      ),
      {
        example: { order_id: ORDER_ID_EXAMPLE, status: 'PAID', attention: null },
      },
    ),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH, 'ORDER_NOT_FOUND']),
  },
};

const NAME = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';

export const devTokenSchema = {
  operationId: 'devToken',
  summary: 'A demo buyer token (development only)',
  description:
    'The storefront\'s "sign in as a demo buyer". 403 in production, before anything is signed; buyer scope only; rate limited.',
  tags: ['development'],
  security: [],
  body: Type.Object(
    { user: Type.String({ pattern: NAME }), tenant: Type.Optional(Type.String({ pattern: NAME })) },
    { additionalProperties: false, examples: [{ user: 'alice' }] },
  ),
  response: {
    200: jsonAnswer(
      'A buyer token',
      Type.Object(
        {
          token: Type.String(),
          tenant: Type.String(),
          user: Type.String(),
          scope: stringEnum(['buyer'] as const),
          expires_in: Type.Integer({ description: 'seconds' }),
        },
        { additionalProperties: false },
      ),
      {
        example: {
          token: 'eyJhbGciOiJIUzI1NiJ9.e30.c2ln',
          tenant: 'acme',
          user: 'alice',
          scope: 'buyer',
          expires_in: 3600,
        },
      },
    ),
    ...problemAnswers([...BODY_ERRORS, 'FORBIDDEN']),
  },
};
