import { allOf, type Db, type Executor, type Tx } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import type { Principal } from '../platform/auth.ts';
import { findReservation, tryExpireNow } from '../stock/index.ts';
import { createOrderOfLines, type CreateOutcome } from './create/one.ts';
import { findLines, lineView } from './orders.lines.ts';
import { applyOrderEvent, visibleTo } from './apply/one.ts';
import { findOrder, getTimeline } from './orders.repo.ts';
import type { OrderStatus } from './decide/states.ts';
import type { Order, TimelineEntry } from './orders.types.ts';

export type { CreateOutcome } from './create/one.ts';

/** The one-line form: an order of one line. */
export function createOrder(
  tx: Tx,
  principal: Principal,
  sku: string,
  quantity: number,
  now: Date,
): Promise<CreateOutcome> {
  return createOrderOfLines(tx, principal, [{ sku, quantity }], now);
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
  return applied.outcome === 'CANCELLED'
    ? { kind: 'CANCELLED', order: applied.order }
    : { kind: 'REJECTED', status: applied.order.status };
}

/** An operator (or the simulation) ends an order's hold now; the next sweep releases it. */
export async function expireHoldNow(db: Executor, principal: Principal, orderId: string, now: Date): Promise<boolean> {
  const order = await getOrderFor(db, principal, orderId);
  let expired = false;
  for (const line of await findLines(db, order))
    expired = (await tryExpireNow(db, order.tenantId, line.reservationKey, now)) || expired;
  return expired;
}

export async function orderView(db: Executor, order: Order) {
  const reservation = await findReservation(db, order.tenantId, order.reservationKey);
  const lines = await findLines(db, order);
  const reservations = await allOf(
    db,
    lines.map((l) => async () => ({
      line: l,
      r: l.lineNo === 1 ? reservation : await findReservation(db, order.tenantId, l.reservationKey),
    })),
  );
  return {
    order_id: order.orderId,
    status: order.status,
    version: order.version,
    sku: order.sku,
    quantity: order.quantity,
    amount: order.amount,
    reservation: {
      key: order.reservationKey,
      status: reservation?.status ?? null,
      expires_at: reservation?.expiresAt.toISOString() ?? null,
    },
    lines: lines.map(lineView),
    reservations: reservations.map(({ line, r }) => ({
      sku: line.sku,
      key: line.reservationKey,
      status: r?.status ?? null,
    })),
    fulfilment: {
      status: order.fulfilmentStatus ?? 'PENDING',
      ...(order.fulfilmentRef ? { ref: order.fulfilmentRef } : {}),
    },
    created_at: order.createdAt.toISOString(),
    updated_at: order.updatedAt.toISOString(),
  };
}

export async function timelineFor(db: Db, principal: Principal, orderId: string): Promise<TimelineEntry[]> {
  await getOrderFor(db, principal, orderId);
  return getTimeline(db, orderId);
}
