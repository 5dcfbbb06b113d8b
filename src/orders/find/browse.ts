import type { Executor } from '../../platform/db.ts';

// Read-only lists for the browser pages (src/web). Bounded: a page shows the newest orders, never all.
export const BROWSE_LIMIT = 50;

/** A buyer's own newest orders; `orders_tenant_user` serves the filter. */
export async function listOrderIdsOfUser(
  db: Executor,
  tenantId: string,
  userId: string,
  limit = BROWSE_LIMIT,
): Promise<string[]> {
  const result = await db.query<{ order_id: string }>(
    'SELECT order_id FROM orders WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at DESC, order_id DESC LIMIT $3',
    [tenantId, userId, Math.min(limit, BROWSE_LIMIT)],
  );
  return result.rows.map((r) => r.order_id);
}

/** Orders of a tenant (every tenant when undefined) by status: the console's live counts. */
export async function statusCounts(db: Executor, tenantId?: string): Promise<Record<string, number>> {
  const result = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM orders WHERE ($1::text IS NULL OR tenant_id = $1) GROUP BY status ORDER BY status',
    [tenantId ?? null],
  );
  return Object.fromEntries(result.rows.map((r) => [r.status, r.n]));
}

export interface OrderRow {
  order_id: string;
  user_id: string;
  status: string;
  amount: number;
  attention: string | null;
  updated_at: string;
}

/** The newest orders of a tenant in one status (or any), for the console's table. */
export async function listOrdersByStatus(
  db: Executor,
  tenantId: string | undefined,
  status: string | undefined,
  limit = BROWSE_LIMIT,
): Promise<OrderRow[]> {
  const result = await db.query<{
    order_id: string;
    user_id: string;
    status: string;
    amount: string;
    attention: string | null;
    updated_at: Date;
  }>(
    `SELECT order_id, user_id, status, amount, attention, updated_at FROM orders
     WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR status = $2)
     ORDER BY updated_at DESC, order_id DESC LIMIT $3`,
    [tenantId ?? null, status ?? null, Math.min(limit, BROWSE_LIMIT)],
  );
  return result.rows.map((r) => ({ ...r, amount: Number(r.amount), updated_at: r.updated_at.toISOString() }));
}

/**
 * "Retry now": the next recovery pass takes this order at once instead of after its backoff.
 * The note for a person stays until recovery clears it by converging (or writes a new one).
 */
export async function tryClearRecoveryBackoff(db: Executor, orderId: string): Promise<boolean> {
  const result = await db.query('UPDATE orders SET next_recovery_at = NULL WHERE order_id = $1', [orderId]);
  return result.rowCount === 1;
}
