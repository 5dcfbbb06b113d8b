import type { Tx } from '../../platform/db.ts';
import { skuKey } from './repo.ts';

/*
 * How a reservation ends: confirmed by a pay, released by cancel / decline / compensation. Lock
 * order as in stock/reservations/repo.ts: the reservation row first, then (release only) its SKU row, then
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
  from: 'HELD' | 'CONFIRMED' | 'REFUNDED_SHIPPED',
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

/**
 * CONFIRMED → REFUNDED_SHIPPED (issue 48): the order was refunded after its units shipped. They
 * have left, so they stay out: the reservation row alone moves (the SKU row's `held` counts units
 * out either way, as tryConfirm), and the view sku_counters shows them as `refunded_shipped`.
 * Acts only on a CONFIRMED reservation and says whether it did.
 */
export async function tryKeepShipped(tx: Tx, tenantId: string, key: string, now: Date): Promise<boolean> {
  const result = await tx.query(
    `UPDATE reservations SET status = 'REFUNDED_SHIPPED', updated_at = $3
     WHERE tenant_id = $1 AND request_key = $2 AND status = 'CONFIRMED'`,
    [tenantId, key, now],
  );
  return result.rowCount === 1;
}

/**
 * REFUNDED_SHIPPED → RELEASED: an operator's audited return puts shipped-and-refunded units back
 * on sale (available + q, out − q, released + q; the buyer's holding shrinks then). Acts only on a
 * REFUNDED_SHIPPED reservation and says whether it did.
 */
export function tryReturnToStock(tx: Tx, tenantId: string, key: string, now: Date): Promise<boolean> {
  return tryReleaseFrom(tx, tenantId, key, 'REFUNDED_SHIPPED', now);
}

/** A reservation a group ends, as its caller read it under its row lock. */
export interface HeldKey {
  tenantId: string;
  key: string;
}

/** How confirmMany / releaseMany name a reservation in the set they return. */
export const heldKeyOf = (tenantId: string, key: string) => skuKey(tenantId, key);

const tenantsAndKeys = (items: readonly HeldKey[]) => [items.map((i) => i.tenantId), items.map((i) => i.key)];

// The group's reservations ($1 tenants, $2 keys), each found by its primary key (LATERAL: one probe
// per key) and then updated by its ctid. Joined on the key columns, the planner could scan a
// tenant's every reservation for the few HELD ones when its statistics say few are HELD (as the
// batch's key completion did: PLAN-01). The caller holds these rows locked, so they cannot move in between.
const HELD_BY_KEY = `(
             SELECT h.at FROM unnest($1::text[], $2::text[]) AS k(tenant_id, request_key)
             CROSS JOIN LATERAL (
               SELECT x.ctid AS at FROM reservations x WHERE x.tenant_id = k.tenant_id AND x.request_key = k.request_key
               OFFSET 0) AS h) AS k`;

/**
 * HELD → CONFIRMED for many reservations in one statement (a recovery group's PAID answers):
 * reservation rows only, as tryConfirm. Returns the keys it confirmed (those that were HELD), as heldKeyOf().
 */
export async function confirmMany(tx: Tx, items: readonly HeldKey[], now: Date): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const result = await tx.query<{ tenant_id: string; request_key: string }>({
    text: `UPDATE reservations r SET status = 'CONFIRMED', updated_at = $3
           FROM ${HELD_BY_KEY}
           WHERE r.ctid = k.at AND r.status = 'HELD'
           RETURNING r.tenant_id, r.request_key`,
    values: [...tenantsAndKeys(items), now],
  });
  return new Set(result.rows.map((row) => heldKeyOf(row.tenant_id, row.request_key)));
}

interface Released {
  tenant_id: string;
  request_key: string;
  sku: string;
  user_id: string;
  quantity: number;
}

/** Sums of `quantity` by the fields `by` names, sorted by them (the lock order of their rows). */
function sums(rows: readonly Released[], by: ReadonlyArray<'tenant_id' | 'sku' | 'user_id'>) {
  const out = new Map<string, { fields: string[]; quantity: number }>();
  for (const row of rows) {
    const fields = by.map((f) => row[f]);
    const id = fields.join('\u0000');
    const seen = out.get(id);
    if (seen) seen.quantity += row.quantity;
    else out.set(id, { fields, quantity: row.quantity });
  }
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

/**
 * HELD → RELEASED for many reservations (a recovery group's FAILED answers), as tryRelease does
 * for one, in three statements whatever the group's size: the reservation rows; each SKU row
 * once, by the summed units (out − q, available + q, released + q); the holdings once per buyer.
 * Lock order as above: the caller holds the reservation rows; SKU rows are locked in
 * (tenant_id, sku) order before they are written when there are several (one UPDATE over many
 * rows locks them in whatever order its plan reads them); holdings last, under their SKU rows.
 * Returns the keys it released (those that were HELD), as heldKeyOf().
 */
export async function releaseMany(tx: Tx, items: readonly HeldKey[], now: Date): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const released = await tx.query<Released>({
    text: `UPDATE reservations r SET status = 'RELEASED', updated_at = $3
           FROM ${HELD_BY_KEY}
           WHERE r.ctid = k.at AND r.status = 'HELD'
           RETURNING r.tenant_id, r.request_key, r.sku, r.user_id, r.quantity`,
    values: [...tenantsAndKeys(items), now],
  });
  const perSku = sums(released.rows, ['tenant_id', 'sku']);
  if (perSku.length === 0) return new Set();
  const columns = (rows: typeof perSku, n: number) => Array.from({ length: n }, (_, i) => rows.map((r) => r.fields[i]));
  if (perSku.length > 1)
    await tx.query(
      `SELECT 1 FROM skus s JOIN unnest($1::text[], $2::text[]) AS k(tenant_id, sku) USING (tenant_id, sku)
       ORDER BY s.tenant_id, s.sku FOR UPDATE OF s`,
      columns(perSku, 2),
    );
  await tx.query({
    text: `UPDATE skus s SET held = s.held - k.q, available = s.available + k.q, released = s.released + k.q
           FROM unnest($1::text[], $2::text[], $3::int[]) AS k(tenant_id, sku, q)
           WHERE s.tenant_id = k.tenant_id AND s.sku = k.sku`,
    values: [...columns(perSku, 2), perSku.map((r) => r.quantity)],
  });
  const perHolding = sums(released.rows, ['tenant_id', 'sku', 'user_id']);
  await tx.query({
    text: `UPDATE user_holdings h SET quantity = h.quantity - k.q
           FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS k(tenant_id, sku, user_id, q)
           WHERE h.tenant_id = k.tenant_id AND h.sku = k.sku AND h.user_id = k.user_id`,
    values: [...columns(perHolding, 3), perHolding.map((r) => r.quantity)],
  });
  return new Set(released.rows.map((row) => heldKeyOf(row.tenant_id, row.request_key)));
}
