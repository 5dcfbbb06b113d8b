import type { Db, Executor, Tx } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import type { Principal } from '../platform/auth.ts';
import { findReservation, findSku, reserve, skuKey, tryExpireNow, type Reservation } from '../inventory/index.ts';
import { applyOrderEvent, visibleTo } from './orders.apply.ts';
import { findOrder, getTimeline, insertOrder, newOrderId, reservationKeyFor } from './orders.repo.ts';
import type { OrderStatus } from './orders.states.ts';
import type { Order, TimelineEntry } from './orders.types.ts';

export type CreateOutcome =
  | { kind: 'CREATED'; order: Order; reservation: Reservation }
  | { kind: 'SOLD_OUT' | 'USER_LIMIT' };

/**
 * Inserts the order and its reservation in the caller's transaction: a buyer who gets no unit
 * leaves no order row. The amount is the SKU's price × quantity now, a snapshot.
 */
export async function createOrder(tx: Tx, principal: Principal, sku: string, quantity: number, now: Date): Promise<CreateOutcome> {
  const found = await findSku(tx, principal.tenantId, sku);
  if (!found) throw new AppError('SKU_NOT_FOUND', `no SKU ${sku}`);
  // Sold out is answered from a plain read, without queueing on the SKU's row lock.
  if (found.available < quantity) return { kind: 'SOLD_OUT' };
  const orderId = newOrderId();
  const key = reservationKeyFor(orderId, 1);
  const [result] = await reserve(tx, [{ tenantId: principal.tenantId, key, userId: principal.userId, sku, quantity }], now, {
    limits: new Map([[skuKey(principal.tenantId, sku), found.perUserLimit]]),
    freshKeys: true,
  });
  if (!result || result.outcome !== 'HELD') return { kind: result?.outcome === 'USER_LIMIT' ? 'USER_LIMIT' : 'SOLD_OUT' };
  const order = { orderId, tenantId: principal.tenantId, userId: principal.userId, sku, quantity, amount: found.price * quantity, reservationKey: key };
  await insertOrder(tx, order, now);
  return {
    kind: 'CREATED',
    order: { ...order, status: 'CREATED', version: 1, reserveAttempt: 1, createdAt: now, updatedAt: now },
    reservation: { tenantId: principal.tenantId, key, userId: principal.userId, sku, quantity, status: 'HELD', expiresAt: result.expiresAt ?? now },
  };
}

export async function getOrderFor(db: Executor, principal: Principal, orderId: string): Promise<Order> {
  const order = await findOrder(db, orderId);
  if (!visibleTo(order, principal)) throw new AppError('ORDER_NOT_FOUND', `no order ${orderId}`);
  return order;
}

export type CancelOutcome = { kind: 'CANCELLED'; order: Order } | { kind: 'REJECTED'; status: OrderStatus };

/** The buyer's cancel: CREATED → CANCELLED, the HELD unit back on sale in the same transaction. */
export async function cancelOrder(tx: Tx, principal: Principal, orderId: string, now: Date): Promise<CancelOutcome> {
  const applied = await applyOrderEvent(tx, orderId, { type: 'CANCEL_REQUESTED' }, now, { visibleTo: principal });
  if (!applied.order) throw new AppError('ORDER_NOT_FOUND', `no order ${orderId}`);
  return applied.outcome === 'CANCELLED' ? { kind: 'CANCELLED', order: applied.order } : { kind: 'REJECTED', status: applied.order.status };
}

/** An operator (or the simulation) ends an order's hold now; the next sweep releases it. */
export async function expireHoldNow(db: Executor, principal: Principal, orderId: string, now: Date): Promise<boolean> {
  const order = await getOrderFor(db, principal, orderId);
  return tryExpireNow(db, order.tenantId, order.reservationKey, now);
}

export async function orderView(db: Executor, order: Order) {
  const reservation = await findReservation(db, order.tenantId, order.reservationKey);
  return {
    order_id: order.orderId,
    status: order.status,
    version: order.version,
    sku: order.sku,
    quantity: order.quantity,
    amount: order.amount,
    reservation: { key: order.reservationKey, status: reservation?.status ?? null, expires_at: reservation?.expiresAt.toISOString() ?? null },
    created_at: order.createdAt.toISOString(),
    updated_at: order.updatedAt.toISOString(),
  };
}

export async function timelineFor(db: Db, principal: Principal, orderId: string): Promise<TimelineEntry[]> {
  await getOrderFor(db, principal, orderId);
  return getTimeline(db, orderId);
}

