import type { Tx } from '../../platform/db.ts';
import { faultPoint } from '../../platform/faultpoints.ts';
import { AppError, invariant } from '../../platform/errors.ts';
import type { Principal } from '../../platform/auth.ts';
import {
  isMirrored,
  lockReservations,
  reserve,
  tryConfirm,
  tryKeepShipped,
  tryRelease,
  tryReturnToStock,
  tryUnconfirm,
  type Reservation,
} from '../../stock/index.ts';
import {
  decide,
  type Decision,
  type Hold,
  type OrderEvent,
  type Outcome,
  type ProviderCall,
  type StockMove,
} from '../decide/decider.ts';
import { lockOrder, noteAttention, transition, type PaymentRef } from '../orders.repo.ts';
import { findLines, setLineReservation, type OrderLine } from '../orders.lines.ts';
import type { Order } from '../orders.types.ts';
import { queueStockRequest } from '../orders.stock-requests.ts';

export interface AppliedEvent {
  outcome: Outcome | 'UNKNOWN_ORDER';
  /** The order after the event (undefined: no such order). */
  order?: Order;
  /** Provider calls the caller makes now that the decision is committed. */
  calls: ProviderCall[];
  decision?: Decision;
  pending?: string;
  attention?: string;
}

export interface ApplyOptions {
  /** Buyer-facing events: an order this principal may not see is "not found". */
  visibleTo?: Principal;
}

/** What a transition caused by this event records about the payment (issue 48): its provider, its id there. */
export function paymentRefOf(event: OrderEvent): PaymentRef | undefined {
  if (event.type === 'PAY_REQUESTED' && event.provider) return { provider: event.provider };
  if (event.type === 'PROVIDER_ANSWERED' && event.paymentId) return { paymentId: event.paymentId };
  return undefined;
}

/** The order as the transition left it: transitionMany's coalesce, in memory. */
export function withPayment(order: Order, ref: PaymentRef | undefined): Order {
  if (!ref) return order;
  return {
    ...order,
    paymentProvider: ref.provider ?? order.paymentProvider ?? null,
    providerPaymentId: order.providerPaymentId ?? ref.paymentId ?? null,
  };
}

/** Buyers see only their own orders; anything else is "not found" so existence is not revealed. */
export function visibleTo(order: Order | undefined, principal: Principal): order is Order {
  if (!order || order.tenantId !== principal.tenantId) return false;
  return principal.scope !== 'buyer' || order.userId === principal.userId;
}

/** Every line's reservation, locked in key order; a line whose row is missing is MISSING. */
async function lockHolds(tx: Tx, order: Order): Promise<Hold[]> {
  const lines = await findLines(tx, order);
  const found = await lockReservations(
    tx,
    order.tenantId,
    lines.map((l) => l.reservationKey),
  );
  return holdsOf(lines, found);
}

/** The decider's view of an order's lines and their locked reservations. */
export function holdsOf(lines: readonly OrderLine[], found: readonly Reservation[]): Hold[] {
  return lines.map((l) => {
    const row = found.find((r) => r.key === l.reservationKey);
    return row
      ? {
          key: row.key,
          sku: row.sku,
          quantity: row.quantity,
          status: row.status,
          expiresAt: row.expiresAt,
          line: l.lineNo,
        }
      : { key: l.reservationKey, sku: l.sku, quantity: l.quantity, status: 'MISSING', expiresAt: null, line: l.lineNo };
  });
}

/** A move the decision made from locked rows; a refusal (SOLD_OUT, USER_LIMIT) only for a re-reserve. */
async function move(tx: Tx, order: Order, m: StockMove, now: Date): Promise<string | undefined> {
  if (m.op === 'unconfirm') {
    invariant(
      await tryUnconfirm(tx, order.tenantId, m.key, now),
      `unconfirm of ${m.key} for ${order.orderId} matched no CONFIRMED reservation although it was locked CONFIRMED`,
    );
    return undefined;
  }
  if (m.op === 'keep_shipped' || m.op === 'return') {
    const done =
      m.op === 'keep_shipped'
        ? await tryKeepShipped(tx, order.tenantId, m.key, now)
        : await tryReturnToStock(tx, order.tenantId, m.key, now);
    const from = m.op === 'keep_shipped' ? 'CONFIRMED' : 'REFUNDED_SHIPPED';
    invariant(
      done,
      `${m.op} of ${m.key} for ${order.orderId} matched no ${from} reservation although it was locked ${from}`,
    );
    return undefined;
  }
  if (m.op === 'confirm' || m.op === 'release') {
    const done =
      m.op === 'confirm'
        ? await tryConfirm(tx, order.tenantId, m.key, now)
        : await tryRelease(tx, order.tenantId, m.key, now);
    invariant(done, `${m.op} of ${m.key} for ${order.orderId} matched no HELD reservation although it was locked HELD`);
    return undefined;
  }
  // Split databases: only the stock service takes units; a late success on a mirrored order whose
  // hold is gone is refused here, so the decider's fallback refunds it (fixed refund key).
  if (order.queued && (await isMirrored(tx, order.orderId))) return 'STOCK_SERVICE_SEPARATE';
  const [result] = await reserve(
    tx,
    [{ tenantId: order.tenantId, key: m.key, userId: order.userId, sku: m.sku, quantity: m.quantity }],
    now,
  );
  if (result?.outcome !== 'HELD') return result?.outcome ?? 'SOLD_OUT';
  invariant(await tryConfirm(tx, order.tenantId, m.key, now), `re-reserved ${m.key} could not be confirmed`);
  await setLineReservation(tx, order.orderId, m.line, m.key, m.attempt);
  return undefined;
}

/** Applies the moves in order; the first refusal stops them and is returned. */
export async function moves(tx: Tx, order: Order, stock: readonly StockMove[], now: Date): Promise<string | undefined> {
  for (const m of stock) {
    const refused = await move(tx, order, m, now);
    if (refused) return refused;
  }
  return undefined;
}

/**
 * The one place an event changes an order: lock the order, then its reservations; ask `decide`;
 * apply the stock moves, the guarded transition (with its log and outbox rows) and any note for a
 * person — all in the caller's transaction. Every guarded write is asserted: under these locks a
 * write that matches no row is a bug, and the transaction fails loudly instead of half-applying.
 */
export async function applyOrderEvent(
  tx: Tx,
  orderId: string,
  event: OrderEvent,
  now: Date,
  options: ApplyOptions = {},
): Promise<AppliedEvent> {
  const order = await lockOrder(tx, orderId);
  if (options.visibleTo && !visibleTo(order, options.visibleTo))
    throw new AppError('ORDER_NOT_FOUND', `no order ${orderId}`);
  if (!order) return { outcome: 'UNKNOWN_ORDER', calls: [] };
  const holds = await lockHolds(tx, order);
  let d = decide(order, holds, event, now);
  if (d.orElse) {
    // A re-reserve may be refused; its savepoint undoes whatever the decision moved before it.
    await tx.query('SAVEPOINT order_decision');
    const refused = await moves(tx, order, d.stock, now);
    if (!refused) await tx.query('RELEASE SAVEPOINT order_decision');
    else {
      await tx.query('ROLLBACK TO SAVEPOINT order_decision');
      d = { ...d.orElse, reason: `${d.orElse.reason ?? ''} (${refused})` };
      invariant(!(await moves(tx, order, d.stock, now)), `fallback moves of ${orderId} refused`);
    }
  } else {
    invariant(!(await moves(tx, order, d.stock, now)), `moves of ${orderId} refused`);
  }
  let after: Order = order;
  if (d.to) {
    const moved = await transition(tx, orderId, order.status, d.to, d.reason ?? event.type, now, paymentRefOf(event));
    invariant(moved.ok, `transition ${order.status} -> ${d.to} of ${orderId} matched no row under its lock`);
    after = withPayment(
      { ...order, status: d.to, version: moved.version ?? order.version + 1, updatedAt: now },
      paymentRefOf(event),
    );
  }
  // A queued order's stock moves travel to the stock service as a request, in this transaction.
  for (const e of d.emits) if (e === 'STOCK_RELEASE_REQUESTED') await queueStockRequest(tx, after, e, now);
  if (d.attention) await noteAttention(tx, orderId, d.attention);
  if (d.outcome === 'PAID') await faultPoint('charged.before-commit'); // C29-11: confirm, PAID and outbox row written, not committed
  return {
    outcome: d.outcome,
    order: after,
    calls: d.calls,
    decision: d,
    ...(d.pending ? { pending: d.pending } : {}),
    ...(d.attention ? { attention: d.attention } : {}),
  };
}
