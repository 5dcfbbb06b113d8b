import type { Executor } from '../../platform/db.ts';
import type { OrderStatus } from '../decide/states.ts';

// The console's order search (issue 36): a tenant's orders newest first, keyset-paged on
// (created_at, order_id) by the index orders_tenant_created (migration 170). Read only.

/** A page holds at most this many orders: the console shows a screenful, never all. */
export const SEARCH_PAGE_MAX = 100;
export const SEARCH_PAGE_DEFAULT = 50;

/** Where the last page ended: the last order's (created_at, order_id), exact to the microsecond. */
export interface SearchCursor {
  createdAt: string;
  orderId: string;
}

export interface OrderSearch {
  /** undefined: every tenant (an operator). */
  tenantId: string | undefined;
  /** An order id or a buyer, matched exactly; `orderIds` adds the orders an Idempotency-Key or a provider txn named. */
  q?: string;
  orderIds?: readonly string[];
  status?: OrderStatus;
  /** Any line of the order. */
  sku?: string;
  limit: number;
  after?: SearchCursor;
}

export interface FoundOrder {
  order_id: string;
  tenant_id: string;
  user_id: string;
  status: OrderStatus;
  sku: string;
  quantity: number;
  amount: number;
  attention: string | null;
  created_at: string;
  updated_at: string;
}

const ISO_MICROS = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/** One page and the cursor of the next (undefined when this page is the last). */
export async function searchOrders(
  db: Executor,
  s: OrderSearch,
): Promise<{ orders: FoundOrder[]; next: SearchCursor | undefined }> {
  const limit = Math.max(1, Math.min(s.limit, SEARCH_PAGE_MAX));
  const result = await db.query<Omit<FoundOrder, 'amount' | 'updated_at'> & { amount: string; updated_at: Date }>(
    `SELECT o.order_id, o.tenant_id, o.user_id, o.status, o.sku, o.quantity, o.amount, o.attention,
            to_char(o.created_at AT TIME ZONE 'UTC', ${ISO_MICROS}) AS created_at, o.updated_at
     FROM orders o
     WHERE ($1::text IS NULL OR o.tenant_id = $1)
       AND ($2::text IS NULL OR o.status = $2)
       AND ($3::text IS NULL OR o.sku = $3
            OR EXISTS (SELECT 1 FROM order_lines l WHERE l.order_id = o.order_id AND l.sku = $3))
       AND ($4::text IS NULL OR o.order_id = $4 OR o.user_id = $4 OR o.order_id = ANY($5::text[]))
       AND ($6::timestamptz IS NULL OR (o.created_at, o.order_id) < ($6::timestamptz, $7::text))
     ORDER BY o.created_at DESC, o.order_id DESC
     LIMIT $8`,
    [
      s.tenantId ?? null,
      s.status ?? null,
      s.sku ?? null,
      s.q ?? null,
      [...(s.orderIds ?? [])],
      s.after?.createdAt ?? null,
      s.after?.orderId ?? null,
      limit + 1,
    ],
  );
  const rows = result.rows.slice(0, limit).map((r) => ({
    ...r,
    amount: Number(r.amount),
    updated_at: r.updated_at.toISOString(),
  }));
  const last = rows[rows.length - 1];
  const next = result.rows.length > limit && last ? { createdAt: last.created_at, orderId: last.order_id } : undefined;
  return { orders: rows, next };
}
