import { inTx, type Db } from '../../platform/db.ts';
import { claimMirrorMoves, markMirrorSynced, type MirrorMove } from '../../stock/index.ts';

// Split databases (docs/queued-orders.md): a queued order's holds are mirrored in the shop, and
// the decider moves the mirror under the order's lock exactly as it moves any reservation. What it
// moved travels to the stock service here, as one request per hold and status, through the shop's
// stock outbox: idempotent by request key (`<hold key>/confirm`, `<hold key>/release`).

// One pass takes at most this many moved holds; the next pass takes the rest.
const SYNC_BATCH = 500;

export const mirrorRequestKey = (m: Pick<MirrorMove, 'key' | 'to'>) =>
  `${m.key}/${m.to === 'CONFIRMED' ? 'confirm' : 'release'}`;

/**
 * Writes a request for every mirror hold whose status moved since the stock service was last
 * asked, and records it as asked, in one transaction: a crash leaves both or neither; two shop
 * processes never take the same hold (SKIP LOCKED, and the guarded mark is the fence). Returns how
 * many requests were written.
 */
export async function syncMirrorMoves(db: Db, now: Date): Promise<number> {
  return inTx(db, async (tx) => {
    const moves = await claimMirrorMoves(tx, SYNC_BATCH);
    let written = 0;
    for (const m of moves) {
      if (m.to === 'HELD') continue; // a mirror hold never goes back to HELD
      if (!(await markMirrorSynced(tx, m))) continue;
      const type = m.to === 'CONFIRMED' ? 'STOCK_CONFIRM_REQUESTED' : 'STOCK_HOLD_RELEASE_REQUESTED';
      const payload = {
        order_id: m.orderId,
        tenant_id: m.tenantId,
        lines: [{ line_no: 0, sku: m.sku, quantity: m.quantity, key: m.key }],
      };
      const inserted = await tx.query(
        `INSERT INTO stock_requests_out (request_key, order_id, event_type, payload, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (request_key) DO NOTHING`,
        [mirrorRequestKey(m), m.orderId, type, payload, now],
      );
      written += inserted.rowCount ?? 0;
    }
    return written;
  });
}
