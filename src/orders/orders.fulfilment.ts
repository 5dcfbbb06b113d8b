import type { Tx } from '../platform/db.ts';

// The fulfilment dimension of an order (seed 002), written by the after-PAID saga through these
// functions: the order's status is never touched here (a fulfilled order stays PAID). The saga
// module finds the orders to start sagas for itself (saga.repo.ts startOrderSagas).

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
