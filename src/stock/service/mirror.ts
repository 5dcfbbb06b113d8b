import type { Executor, Tx } from '../../platform/db.ts';
import type { ReservationStatus } from '../stock.types.ts';

// Split databases (docs/queued-orders.md): the stock service owns the authoritative holds in its
// own database; the shop keeps a MIRROR of a queued order's holds in its reservations table, so the
// order decider still locks them with the order and decides confirm / release as it always has.
// The mirror's counters on the shop's SKU replica move with it (the reconciliation's conservation
// checks keep holding), but they decide nothing: the shop never takes a unit itself (no reserve,
// no re-reserve). Every status the mirror moves to travels to the stock service as a request.
//
// Why the mirror never over-counts: a hold reaches the mirror only after the stock service granted
// it, and the mirror releases or confirms before the stock service hears of it, so the mirror's
// held + confirmed never exceeds the stock service's and its `available` never goes negative.

export interface GrantedHold {
  key: string;
  sku: string;
  quantity: number;
  expires_at: string | null;
}

/**
 * Writes the granted holds into the shop's reservations (HELD, the stock service's expiry), moves
 * the replica's counters and the buyer's holding, and records each as synced HELD. Idempotent by
 * key: a replayed result inserts nothing. The caller holds the order's row lock (lock order 1).
 */
export async function mirrorHolds(
  tx: Tx,
  owner: { tenantId: string; userId: string; orderId: string },
  holds: readonly GrantedHold[],
  now: Date,
): Promise<number> {
  let inserted = 0;
  // SKU rows are taken in (sku) order, like every reserve (lock order 3).
  for (const h of [...holds].sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0))) {
    const fresh = await tx.query(
      `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'HELD', $6, $7, $7) ON CONFLICT DO NOTHING`,
      [owner.tenantId, h.key, owner.userId, h.sku, h.quantity, h.expires_at ?? now, now],
    );
    if (fresh.rowCount !== 1) continue;
    inserted++;
    await tx.query('UPDATE skus SET held = held + $3, available = available - $3 WHERE tenant_id = $1 AND sku = $2', [
      owner.tenantId,
      h.sku,
      h.quantity,
    ]);
    await tx.query(
      `INSERT INTO user_holdings (tenant_id, sku, user_id, quantity) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, sku, user_id) DO UPDATE SET quantity = user_holdings.quantity + EXCLUDED.quantity`,
      [owner.tenantId, h.sku, owner.userId, h.quantity],
    );
    await tx.query(
      `INSERT INTO stock_mirror_holds (tenant_id, request_key, order_id, synced_status) VALUES ($1, $2, $3, 'HELD')`,
      [owner.tenantId, h.key, owner.orderId],
    );
  }
  return inserted;
}

export interface MirrorMove {
  tenantId: string;
  key: string;
  orderId: string;
  sku: string;
  quantity: number;
  from: ReservationStatus;
  to: ReservationStatus;
}

/**
 * Mirror holds whose status moved past what the stock service was last asked, locked (SKIP
 * LOCKED: another shop process takes the others). Whoever moved the mirror (the decider, the
 * expiry sweep, an operator) needs no hook of its own: the move is found here.
 */
export async function claimMirrorMoves(tx: Tx, limit: number): Promise<MirrorMove[]> {
  const result = await tx.query<{
    tenant_id: string;
    request_key: string;
    order_id: string;
    sku: string;
    quantity: number;
    synced_status: ReservationStatus;
    status: ReservationStatus;
  }>(
    `SELECT m.tenant_id, m.request_key, m.order_id, r.sku, r.quantity, m.synced_status, r.status
     FROM stock_mirror_holds m JOIN reservations r ON r.tenant_id = m.tenant_id AND r.request_key = m.request_key
     WHERE r.status <> m.synced_status AND r.status <> 'REFUNDED_SHIPPED' ORDER BY m.order_id, m.request_key LIMIT $1 FOR UPDATE OF m SKIP LOCKED`,
    [limit],
  );
  return result.rows.map((r) => ({
    tenantId: r.tenant_id,
    key: r.request_key,
    orderId: r.order_id,
    sku: r.sku,
    quantity: r.quantity,
    from: r.synced_status,
    to: r.status,
  }));
}

/** Records that the stock service was asked for `to`; guarded by `from`, so a second writer matches nothing. */
export async function markMirrorSynced(tx: Tx, m: MirrorMove): Promise<boolean> {
  const result = await tx.query(
    'UPDATE stock_mirror_holds SET synced_status = $4 WHERE tenant_id = $1 AND request_key = $2 AND synced_status = $3',
    [m.tenantId, m.key, m.from, m.to],
  );
  return result.rowCount === 1;
}

/** The order's holds live in the stock service's database (its reservations here are a mirror). */
export async function isMirrored(db: Executor, orderId: string): Promise<boolean> {
  const result = await db.query('SELECT 1 FROM stock_mirror_holds WHERE order_id = $1 LIMIT 1', [orderId]);
  return (result.rowCount ?? 0) > 0;
}

/** Every mirror hold with its status, for comparing with the stock service's reservations. */
export async function listMirrorHolds(
  db: Executor,
): Promise<Array<{ tenant_id: string; key: string; status: ReservationStatus; synced: ReservationStatus }>> {
  const result = await db.query<{
    tenant_id: string;
    key: string;
    status: ReservationStatus;
    synced: ReservationStatus;
  }>(
    `SELECT m.tenant_id, m.request_key AS key, r.status, m.synced_status AS synced
     FROM stock_mirror_holds m JOIN reservations r ON r.tenant_id = m.tenant_id AND r.request_key = m.request_key
     ORDER BY 1, 2`,
  );
  return result.rows;
}
