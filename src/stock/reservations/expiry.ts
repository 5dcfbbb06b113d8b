import type { Executor, Tx } from '../../platform/db.ts';

// Bounded so one sweep never holds locks on an unbounded number of rows.
const EXPIRY_BATCH = 500;

/**
 * Releases HELD reservations past expires_at, looking at nothing else (not at orders: a slow
 * payment does not keep stock off sale). SKIP LOCKED lets several sweepers share the work and
 * skips reservations a payment is confirming right now. Three statements, in the lock order:
 * the reservations, then their SKU rows in (tenant, sku) order, then the holdings.
 */
export async function releaseExpiredBatch(tx: Tx, now: Date, tenantId?: string): Promise<number> {
  const released = await tx.query<{ tenant_id: string; sku: string; user_id: string; quantity: number }>(
    `WITH expired AS (
       SELECT tenant_id, request_key FROM reservations
       WHERE status = 'HELD' AND expires_at <= $1 AND ($2::text IS NULL OR tenant_id = $2)
       ORDER BY expires_at LIMIT ${EXPIRY_BATCH} FOR UPDATE SKIP LOCKED)
     UPDATE reservations r SET status = 'RELEASED', updated_at = $1 FROM expired e
     WHERE r.tenant_id = e.tenant_id AND r.request_key = e.request_key
     RETURNING r.tenant_id, r.sku, r.user_id, r.quantity`,
    [now, tenantId ?? null],
  );
  if (released.rows.length === 0) return 0;
  const rows = JSON.stringify(released.rows);
  // ORDER BY is applied before FOR UPDATE locks: the SKU rows are locked in order.
  await tx.query(
    `SELECT 1 FROM skus s WHERE (s.tenant_id, s.sku) IN (SELECT tenant_id, sku FROM jsonb_to_recordset($1::jsonb) AS x(tenant_id text, sku text))
     ORDER BY s.tenant_id, s.sku FOR UPDATE`,
    [rows],
  );
  await tx.query(
    `WITH x AS (SELECT tenant_id, sku, sum(quantity)::int AS quantity FROM jsonb_to_recordset($1::jsonb) AS x(tenant_id text, sku text, user_id text, quantity int) GROUP BY 1, 2)
     UPDATE skus s SET held = s.held - x.quantity, available = s.available + x.quantity, released = s.released + x.quantity
     FROM x WHERE s.tenant_id = x.tenant_id AND s.sku = x.sku`,
    [rows],
  );
  await tx.query(
    `WITH x AS (SELECT tenant_id, sku, user_id, sum(quantity)::int AS quantity FROM jsonb_to_recordset($1::jsonb) AS x(tenant_id text, sku text, user_id text, quantity int) GROUP BY 1, 2, 3)
     UPDATE user_holdings h SET quantity = h.quantity - x.quantity
     FROM x WHERE h.tenant_id = x.tenant_id AND h.sku = x.sku AND h.user_id = x.user_id`,
    [rows],
  );
  return released.rows.length;
}

/** Moves a HELD reservation's expiry to now (an operator releasing a hold early); the sweep does the rest. */
export async function tryExpireNow(db: Executor, tenantId: string, key: string, now: Date): Promise<boolean> {
  const result = await db.query(
    `UPDATE reservations SET expires_at = $3 WHERE tenant_id = $1 AND request_key = $2 AND status = 'HELD'`,
    [tenantId, key, now],
  );
  return result.rowCount === 1;
}
