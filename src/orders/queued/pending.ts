import type { Tx } from '../../platform/db.ts';
import type { Principal } from '../../platform/auth.ts';
import type { SkuTerms } from '../../stock/index.ts';
import { canonicalLines, readSkus, type RequestedLine } from '../create/one.ts';
import {
  lineColumns,
  lineView,
  orderHead,
  refuseAmountTooLarge,
  snapshotLines,
  chargeableTotal,
  type OrderLine,
} from '../orders.lines.ts';
import { jsonResponse, type KeyedOperation, type StoredResponse } from '../../idempotency/index.ts';
import { newOrderId } from '../orders.repo.ts';
import type { Order } from '../orders.types.ts';
import { stockRequestKey, stockRequestPayload } from '../orders.stock-requests.ts';

// Queued orders (seed 004): the create answers 202 PENDING and the stock request travels with the
// order in ONE commit; the stock service holds the units later and answers (orders/queued/results.ts).

export interface PendingOutcome {
  order: Order;
  lines: OrderLine[];
}

/**
 * The PENDING order, its lines (names and prices snapshot now) and its deduction request, in the
 * caller's transaction. Nothing is reserved: the line keys are the ones the stock service holds under.
 */
export async function createPendingOrder(
  tx: Tx,
  principal: Principal,
  requested: readonly RequestedLine[],
  now: Date,
  maxAmountMinor?: number,
): Promise<PendingOutcome> {
  const sorted = canonicalLines(requested);
  const skus = await readSkus(tx, principal.tenantId, sorted);
  const prices = skus.map((sku) => sku.price);
  if (chargeableTotal(sorted, prices, maxAmountMinor) === undefined)
    refuseAmountTooLarge(sorted, prices, maxAmountMinor);
  const { order, lines, payload, requestKey } = buildPendingOrder(principal, sorted, skus as SkuTerms[], now);
  const first = lines[0] as OrderLine;
  // One statement (one round trip) for the order, its log row, its lines and its stock request: the
  // 202 is four writes but a single wait on the database before the commit.
  await tx.query(
    `WITH o AS (
       INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, queued, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'PENDING', 1, $7, true, $8, $8) RETURNING order_id),
     t AS (
       INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at) SELECT order_id, NULL, 'PENDING', 1, 'create (queued)', $8 FROM o),
     l AS (
       INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount, reservation_key)
       SELECT o.order_id, l.line_no, $2, l.sku, l.name, l.unit_price, l.quantity, l.unit_price * l.quantity, CASE WHEN l.line_no = 1 THEN NULL ELSE l.reservation_key END
       FROM o, unnest($9::int[], $10::text[], $11::text[], $12::bigint[], $13::int[], $14::text[]) AS l(line_no, sku, name, unit_price, quantity, reservation_key))
     INSERT INTO stock_requests_out (request_key, order_id, event_type, payload, created_at)
     SELECT $15, order_id, 'STOCK_DEDUCTION_REQUESTED', $16, $8 FROM o`,
    [
      order.orderId,
      principal.tenantId,
      principal.userId,
      first.sku,
      first.quantity,
      order.amount,
      first.reservationKey,
      now,
      ...lineColumns(lines),
      requestKey,
      payload,
    ],
  );
  return { order, lines };
}

/** RFC 7240: `Prefer: respond-async` (any of the header's preferences), or FLASHPAY_ORDER_MODE=async for every create. */
export function wantsAsync(prefer: string | string[] | undefined, mode: 'sync' | 'async'): boolean {
  if (mode === 'async') return true;
  const values = Array.isArray(prefer) ? prefer : prefer ? [prefer] : [];
  return values.some((v) => v.split(/[,;]/).some((p) => p.trim().toLowerCase() === 'respond-async'));
}

/** The 202 a queued create answers (stored with the key, replayed byte for byte). */
async function queuedCreateResponse(
  tx: Tx,
  principal: Principal,
  requested: readonly RequestedLine[],
  now: Date,
  maxAmountMinor: number,
): Promise<StoredResponse> {
  return pendingResponse(await createPendingOrder(tx, principal, requested, now, maxAmountMinor));
}

/** The keyed one-transaction queued create (executeKeyed's operation without scope and digest). */
export function keyedQueuedCreate(
  principal: Principal,
  lines: readonly RequestedLine[],
  now: () => Date,
  /** The largest total the tenant's provider accepts (maxOrderAmountOf): past it, 400 AMOUNT_TOO_LARGE. */
  maxAmountMinor: number,
): Pick<KeyedOperation, 'finalOnly' | 'start'> {
  return {
    finalOnly: true,
    start: async (tx) => ({ final: await queuedCreateResponse(tx, principal, lines, now(), maxAmountMinor) }),
  };
}

/**
 * The PENDING order and lines createPendingOrder writes, built from SKU terms read before (the
 * group commit of queued creates, orders/queued/pending.batch.ts): same ids, names, prices, line keys.
 */
export function buildPendingOrder(
  principal: Principal,
  sorted: readonly RequestedLine[],
  skus: readonly Pick<SkuTerms, 'name' | 'price'>[],
  now: Date,
): PendingOutcome & { payload: string; requestKey: string } {
  const orderId = newOrderId();
  const lines: OrderLine[] = snapshotLines(orderId, sorted, skus);
  const order: Order = {
    ...orderHead(orderId, principal, lines),
    status: 'PENDING',
    version: 1,
    reserveAttempt: 1,
    queued: true,
    createdAt: now,
    updatedAt: now,
  };
  return {
    order,
    lines,
    payload: JSON.stringify(stockRequestPayload(order, lines)),
    requestKey: stockRequestKey(orderId, 'STOCK_DEDUCTION_REQUESTED'),
  };
}

/** The 202 of queuedCreateResponse for an order built by buildPendingOrder. */
export function pendingResponse({ order, lines }: PendingOutcome): StoredResponse {
  const view = {
    order_id: order.orderId,
    status: order.status,
    sku: order.sku,
    quantity: order.quantity,
    amount: order.amount,
    lines: lines.map(lineView),
  };
  return jsonResponse(202, view, `/v1/orders/${order.orderId}`);
}
