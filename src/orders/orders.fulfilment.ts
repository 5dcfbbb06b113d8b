import type { Executor, Tx } from '../platform/db.ts';

// The fulfilment dimension of an order (seed 002), written by the after-PAID saga through these
// functions: the order's status is never touched here (a fulfilled order stays PAID).

/** PENDING → FULFILLED or REFUSED, once; says whether it did. */
export async function trySetFulfilment(
  tx: Tx,
  orderId: string,
  status: 'FULFILLED' | 'REFUSED',
  ref: string | null,
): Promise<boolean> {
  const result = await tx.query(
    `UPDATE orders SET fulfilment_status = $2, fulfilment_ref = $3 WHERE order_id = $1 AND fulfilment_status = 'PENDING'`,
    [orderId, status, ref],
  );
  return (result.rowCount ?? 0) === 1;
}

/** PAID orders not yet fulfilled, oldest first: the saga pass starts a saga for each it has none for. */
export async function listUnfulfilledPaid(db: Executor, limit: number): Promise<string[]> {
  const result = await db.query<{ order_id: string }>(
    `SELECT order_id FROM orders WHERE status = 'PAID' AND fulfilment_status = 'PENDING' ORDER BY updated_at LIMIT $1`,
    [limit],
  );
  return result.rows.map((r) => r.order_id);
}
