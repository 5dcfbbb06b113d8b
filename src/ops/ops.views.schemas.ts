import { Type } from 'typebox';
import { ADMIN_AUTH, jsonAnswer, nullable, PARAM_ERRORS, problemAnswers } from '../platform/openapi.ts';
import { adminOrderSchema, AdminOrderView } from '../payments/index.ts';
import { RecoveryState } from '../recovery/index.ts';
import { SkuView } from '../stock/index.ts';

// Issue 52: the on-call engineer's two reads — every SKU with its outcomes, and why an order is stuck.

export const SKU_PAGE_DEFAULT = 20;
export const SKU_PAGE_MAX = 100;

export const SkuListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,2}$',
        description: `page size, 1..${SKU_PAGE_MAX} (default ${SKU_PAGE_DEFAULT})`,
        examples: ['20'],
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 400,
        pattern: '^[A-Za-z0-9_-]+$',
        description: "the previous page's `next_cursor`",
      }),
    ),
  },
  { additionalProperties: false },
);
export interface SkuListQuery {
  limit?: string;
  cursor?: string;
}

const ListedSku = Type.Object(
  {
    tenant_id: Type.String(),
    ...SkuView.properties,
    orders: Type.Record(Type.String(), Type.Integer(), {
      description: 'orders with a line of this SKU, by status (PAID, REFUNDED, …; a status with none is absent)',
    }),
  },
  { additionalProperties: false },
);

const SKU_EXAMPLE = {
  tenant_id: 'acme',
  sku: 'tee-black-m',
  name: 'T-shirt, black, M',
  price: 1990,
  per_user_limit: 2,
  hold_ttl_ms: 60000,
  total: 100,
  available: 90,
  held: 2,
  confirmed: 7,
  released: 4,
  refunded_shipped: 1,
  orders: { CANCELLED: 4, PAID: 7, PAYING: 2, REFUNDED: 1 },
};

export const listSkusSchema = {
  operationId: 'adminListSkus',
  summary: "The tenant's SKUs with their counters and order outcomes, a page at a time",
  description:
    "The token's tenant (every tenant for an operator), in (tenant, sku) order, keyset-paged: pass `next_cursor` as `cursor` for the next page; `null` on the last page. A cursor this server did not give: 400 `VALIDATION`, nothing read. Each SKU's counters come from one snapshot: `total = available + held + confirmed + refunded_shipped`.",
  tags: ['admin'],
  querystring: SkuListQuery,
  response: {
    200: jsonAnswer(
      'A page of SKUs',
      Type.Object(
        {
          skus: Type.Array(ListedSku),
          next_cursor: nullable(Type.String({ description: 'the cursor of the next page' })),
        },
        { additionalProperties: false },
      ),
      { example: { skus: [SKU_EXAMPLE], next_cursor: 'WyJhY21lIiwidGVlLWJsYWNrLW0iXQ' } },
    ),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH]),
  },
};

const AdminOrderWithRecovery = Type.Object(
  { ...AdminOrderView.properties, recovery: RecoveryState },
  { additionalProperties: false },
);

const ordered = adminOrderSchema.response[200].content['application/json'].schema as { examples?: unknown[] };

export const adminOrderViewSchema = {
  ...adminOrderSchema,
  summary: 'An order with its timeline, notifications, saga journal and, while unfinished, its recovery',
  response: {
    ...adminOrderSchema.response,
    200: jsonAnswer('The order', AdminOrderWithRecovery, {
      example: { ...(ordered.examples?.[0] as object), recovery: null },
    }),
  },
};
