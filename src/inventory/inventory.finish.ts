import type { Tx } from '../platform/db.ts';

/*
 * How a reservation ends: confirmed by a pay, released by cancel / decline / compensation. Lock
 * order as in inventory.repo.ts: the reservation row first, then (release only) its SKU row, then
 * the holding.
 *
 * Confirming touches the reservation only (issue 16). The SKU row counts the units *out* in its
 * `held` column (HELD + CONFIRMED reservations; migration 110), and HELD -> CONFIRMED does not
 * change that number, so a pay never queues on the hot SKU's row lock behind the creates'
 * batches. The held / confirmed split is derived from the reservations where it is read (view
 * sku_counters). Chosen over per-state counter rows apart from the SKU row: a `confirmed` row per
 * SKU would be a second hot row that every pay of the sale queues on (striping it would fix that
 * at the price of N rows to keep and sum), while the CONFIRMED reservations are rows the pay
 * already writes, and reconciliation already counts them. Release still moves `available`, so it
 * still takes the SKU row: a unit back on sale must be visible to the conditional decrement.
 */

async function subtractHolding(tx: Tx, tenantId: string, sku: string, userId: string, quantity: number): Promise<void> {
  await tx.query(
    'UPDATE user_holdings SET quantity = quantity - $4 WHERE tenant_id = $1 AND sku = $2 AND user_id = $3',
    [tenantId, sku, userId, quantity],
  );
}

/**
 * HELD → CONFIRMED on the reservation row alone: the units stay out, the SKU row is not locked.
 * Acts only on a HELD reservation and reports whether it did: callers decide from that, never assume.
 */
export async function tryConfirm(tx: Tx, tenantId: string, key: string, now: Date): Promise<boolean> {
  const result = await tx.query({
    name: 'reservation-confirm',
    text: `UPDATE reservations SET status = 'CONFIRMED', updated_at = $3
           WHERE tenant_id = $1 AND request_key = $2 AND status = 'HELD'`,
    values: [tenantId, key, now],
  });
  return result.rowCount === 1;
}

/**
 * HELD or CONFIRMED → RELEASED: the units go back on sale in the same statement (out − q,
 * available + q, released + q on the SKU row), then the holding shrinks. Acts only on a
 * reservation in `from` and reports whether it did.
 */
async function tryReleaseFrom(
  tx: Tx,
  tenantId: string,
  key: string,
  from: 'HELD' | 'CONFIRMED',
  now: Date,
): Promise<boolean> {
  const result = await tx.query<{ user_id: string; sku: string; quantity: number }>(
    `WITH r AS (
       UPDATE reservations SET status = 'RELEASED', updated_at = $4
       WHERE tenant_id = $1 AND request_key = $2 AND status = $3
       RETURNING tenant_id, sku, user_id, quantity)
     UPDATE skus s SET held = s.held - r.quantity, available = s.available + r.quantity, released = s.released + r.quantity
     FROM r WHERE s.tenant_id = r.tenant_id AND s.sku = r.sku
     RETURNING r.user_id, r.sku, r.quantity`,
    [tenantId, key, from, now],
  );
  const row = result.rows[0];
  if (!row) return false;
  await subtractHolding(tx, tenantId, row.sku, row.user_id, row.quantity);
  return true;
}

/** HELD → RELEASED (cancel, decline, a mirror's release). */
export function tryRelease(tx: Tx, tenantId: string, key: string, now: Date): Promise<boolean> {
  return tryReleaseFrom(tx, tenantId, key, 'HELD', now);
}

/**
 * CONFIRMED → RELEASED: a sold unit goes back on sale (seed 002's compensation, after the refund
 * is confirmed). Acts only on a CONFIRMED reservation and says whether it did.
 */
export function tryUnconfirm(tx: Tx, tenantId: string, key: string, now: Date): Promise<boolean> {
  return tryReleaseFrom(tx, tenantId, key, 'CONFIRMED', now);
}
