import type { Tx } from '../platform/db.ts';
import { findLines, type OrderLine } from './orders.lines.ts';
import type { Order } from './orders.types.ts';

// The shop's stock requests (seed 004), written in the caller's transaction: the queued create
// (orders/queued/) sends a deduction, the decider's release (orders/apply/) a release. Here at the
// module's root because both rooms write them and neither may import the other.

export const STOCK_REQUEST_TYPES = ['STOCK_DEDUCTION_REQUESTED', 'STOCK_RELEASE_REQUESTED'] as const;
export type StockRequestType = (typeof STOCK_REQUEST_TYPES)[number];

/** One request key per order and purpose: a re-send is the same request, deduplicated by the stock service. */
export const stockRequestKey = (orderId: string, type: StockRequestType) =>
  `${orderId}/${type === 'STOCK_DEDUCTION_REQUESTED' ? 'deduct' : 'release'}`;

/** What a stock request carries: the order's lines under the keys the stock service holds them by. */
export const stockRequestPayload = (order: Order, lines: readonly OrderLine[]) => ({
  order_id: order.orderId,
  tenant_id: order.tenantId,
  user_id: order.userId,
  lines: lines.map((l) => ({ line_no: l.lineNo, sku: l.sku, quantity: l.quantity, key: l.reservationKey })),
});

/** Writes a stock request to the shop's stock outbox in the caller's transaction; once per key. */
export async function queueStockRequest(
  tx: Tx,
  order: Order,
  type: StockRequestType,
  now: Date,
  known?: readonly OrderLine[],
): Promise<void> {
  const lines = known ?? (await findLines(tx, order));
  const payload = stockRequestPayload(order, lines);
  await tx.query(
    `INSERT INTO stock_requests_out (request_key, order_id, event_type, payload, created_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (request_key) DO NOTHING`,
    [stockRequestKey(order.orderId, type), order.orderId, type, payload, now],
  );
}
