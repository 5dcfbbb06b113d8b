import type { Db, Executor, Tx } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import type { Principal } from '../platform/auth.ts';
import { findReservation, findSku, reserve, skuKey, tryRelease } from '../inventory/inventory.repo.ts';
import type { Reservation } from '../inventory/inventory.types.ts';
import { findOrder, getTimeline, insertOrder, lockOrder, newOrderId, reservationKeyFor, transition } from './orders.repo.ts';
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

/** Buyers see only their own orders; anything else is "not found" so existence is not revealed. */
export function visibleTo(order: Order | undefined, principal: Principal): order is Order {
  if (!order || order.tenantId !== principal.tenantId) return false;
  return principal.scope !== 'buyer' || order.userId === principal.userId;
}

export async function getOrderFor(db: Executor, principal: Principal, orderId: string): Promise<Order> {
  const order = await findOrder(db, orderId);
  if (!visibleTo(order, principal)) throw new AppError('ORDER_NOT_FOUND', `no order ${orderId}`);
  return order;
}

export type CancelOutcome = { kind: 'CANCELLED'; order: Order } | { kind: 'REJECTED'; status: OrderStatus };

/**
 * CREATED → CANCELLED for an order the caller has locked, releasing its reservation if still HELD,
 * in the caller's transaction. Used by the buyer's cancel, by pay on an expired hold, and by recovery.
 */
export async function cancelLocked(tx: Tx, order: Order, reason: string, now: Date): Promise<CancelOutcome> {
  const moved = order.status === 'CREATED' && (await transition(tx, order.orderId, 'CREATED', 'CANCELLED', reason, now)).ok;
  if (!moved) return { kind: 'REJECTED', status: order.status };
  await tryRelease(tx, order.tenantId, order.reservationKey, now);
  return { kind: 'CANCELLED', order: { ...order, status: 'CANCELLED', version: order.version + 1, updatedAt: now } };
}

/** The buyer's cancel: CREATED → CANCELLED, the HELD unit back on sale in the same transaction. */
export async function cancelOrder(tx: Tx, principal: Principal, orderId: string, reason: string, now: Date): Promise<CancelOutcome> {
  const order = await lockOrder(tx, orderId);
  if (!visibleTo(order, principal)) throw new AppError('ORDER_NOT_FOUND', `no order ${orderId}`);
  return cancelLocked(tx, order, reason, now);
}

/** The order's unit is no longer held for it: released, or past its expiry (the sweep may not have run yet). */
export async function holdIsGone(tx: Tx, order: Order, now: Date): Promise<boolean> {
  const reservation = await findReservation(tx, order.tenantId, order.reservationKey);
  return reservation?.status !== 'HELD' || reservation.expiresAt <= now;
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

