import { allOf, type Tx } from '../../platform/db.ts';
import { faultPoint } from '../../platform/faultpoints.ts';
import { invariant } from '../../platform/errors.ts';
import {
  confirmMany,
  heldKeyOf,
  lockReservationsOfOrders,
  releaseMany,
  type HeldKey,
  type Reservation,
} from '../../stock/index.ts';
import { decide, type Decision, type OrderEvent } from '../decide/decider.ts';
import { applyOrderEvent, holdsOf, moves, paymentRefOf, withPayment, type AppliedEvent } from './one.ts';
import { lineRowsOf, linesOf } from '../orders.lines.ts';
import { lockOrders, transitionMany, type TransitionRequest } from '../orders.repo.ts';
import type { Order } from '../orders.types.ts';

// applyOrderEvent for many orders in the caller's transaction (recovery applies thousands of
// provider answers after an outage): the same locks, the same decider, the same stock moves and
// guarded transitions, but the orders, their lines and their reservations are read and locked
// in one statement each, the confirms and releases made set-based (each SKU row written once per
// group, not once per order), and the transitions (with their log and outbox rows) written in one.

/** A decision the set-based path applies; one with a fallback or a stock request takes the one-order path. */
const setBased = (d: Decision) => !d.orElse && !d.emits.includes('STOCK_RELEASE_REQUESTED');
/** Stock moves the group makes set-based: only confirms and releases (an unconfirm goes order by order). */
const groupMoves = (d: Decision) => d.stock.every((m) => m.op === 'confirm' || m.op === 'release');

/**
 * The group's confirms in one statement and its releases in three (each SKU row once, by the
 * summed units: stock/reservations/finish.ts), after every order and reservation of the group is locked.
 * Each was decided from a reservation locked HELD, so each must match: asserted.
 */
async function groupStockMoves(tx: Tx, confirms: HeldKey[], releases: HeldKey[], now: Date): Promise<void> {
  const confirmed = await confirmMany(tx, confirms, now);
  const released = await releaseMany(tx, releases, now);
  for (const [done, op, items] of [
    [confirmed, 'confirm', confirms],
    [released, 'release', releases],
  ] as const)
    for (const { tenantId, key } of items)
      invariant(
        done.has(heldKeyOf(tenantId, key)),
        `${op} of ${key} matched no HELD reservation although it was locked HELD`,
      );
}

/**
 * noteAttention for many orders in one statement (each was one UPDATE per order): the rows are
 * locked by this transaction already, the note is cut as noteAttention cuts it.
 */
async function noteAttentionMany(tx: Tx, notes: ReadonlyArray<{ orderId: string; note: string }>): Promise<void> {
  if (notes.length === 0) return;
  await tx.query(
    'UPDATE orders o SET attention = n.note FROM unnest($1::text[], $2::text[]) AS n(order_id, note) WHERE o.order_id = n.order_id',
    [notes.map((n) => n.orderId), notes.map((n) => n.note.slice(0, 500))],
  );
}

/**
 * Applies each event to its order, as applyOrderEvent would, in the caller's transaction. Orders
 * are locked first, in id order, then their reservations, in key order. Answers in input order.
 */
export async function applyOrderEvents(
  tx: Tx,
  items: ReadonlyArray<{ orderId: string; event: OrderEvent }>,
  now: Date,
): Promise<AppliedEvent[]> {
  invariant(new Set(items.map((i) => i.orderId)).size === items.length, 'one event per order in a group');
  // Orders first (in id order), then their reservations (in tenant, key order), as before; on a
  // pipelined transaction the three reads go out together instead of one round trip each (allOf):
  // PostgreSQL runs them in order, and the reservations' statement reads the keys of orders the
  // first has locked.
  const ids = items.map((i) => i.orderId);
  const [orders, lineRows, held] = await allOf(tx, [
    () => lockOrders(tx, ids),
    () => lineRowsOf(tx, ids),
    () => lockReservationsOfOrders(tx, ids),
  ]);
  const lines = linesOf([...orders.values()], lineRows);
  // Keyed by tenant, then reservation key: each order finds its rows in O(its lines), not by
  // scanning the group's reservations (which made a group of n orders cost n²).
  const reservations = new Map<string, Map<string, Reservation>>();
  for (const r of held) {
    let byKey = reservations.get(r.tenantId);
    if (!byKey) reservations.set(r.tenantId, (byKey = new Map()));
    if (!byKey.has(r.key)) byKey.set(r.key, r);
  }
  const decided = new Map<string, { order: Order; d: Decision; event: OrderEvent }>();
  const out = new Map<string, AppliedEvent>();
  const confirms: HeldKey[] = [];
  const releases: HeldKey[] = [];
  for (const { orderId, event } of items) {
    const order = orders.get(orderId);
    if (!order) {
      out.set(orderId, { outcome: 'UNKNOWN_ORDER', calls: [] });
      continue;
    }
    const own = lines.get(orderId) ?? [];
    const byKey = reservations.get(order.tenantId);
    const mine = own.flatMap((l) => byKey?.get(l.reservationKey) ?? []);
    const d = decide(order, holdsOf(own, mine), event, now);
    if (!setBased(d)) {
      out.set(orderId, await applyOrderEvent(tx, orderId, event, now));
      continue;
    }
    if (!groupMoves(d)) invariant(!(await moves(tx, order, d.stock, now)), `moves of ${orderId} refused`);
    else
      for (const m of d.stock)
        (m.op === 'confirm' ? confirms : releases).push({ tenantId: order.tenantId, key: m.key });
    decided.set(orderId, { order, d, event });
  }
  const requests: TransitionRequest[] = [];
  const notes: Array<{ orderId: string; note: string }> = [];
  for (const [orderId, { order, d, event }] of decided) {
    if (d.to) {
      const payment = paymentRefOf(event);
      requests.push({
        orderId,
        from: order.status,
        to: d.to,
        reason: d.reason ?? event.type,
        ...(payment ? { payment } : {}),
      });
    }
    if (d.attention) notes.push({ orderId, note: d.attention });
  }
  // The writes, in this order (stock, transitions, notes), together on a pipelined transaction
  // (the pays' groups): every row they touch is locked already. Checked once all are answered; a
  // failure rolls all back.
  const [, versions] = await allOf(tx, [
    () => groupStockMoves(tx, confirms, releases, now),
    () => transitionMany(tx, requests, now),
    () => noteAttentionMany(tx, notes),
  ]);
  for (const [orderId, { order, d, event }] of decided) {
    let after = order;
    if (d.to) {
      const version = versions.get(orderId);
      invariant(
        version !== undefined,
        `transition ${order.status} -> ${d.to} of ${orderId} matched no row under its lock`,
      );
      after = withPayment({ ...order, status: d.to, version, updatedAt: now }, paymentRefOf(event));
    }
    out.set(orderId, {
      outcome: d.outcome,
      order: after,
      calls: d.calls,
      decision: d,
      ...(d.pending ? { pending: d.pending } : {}),
      ...(d.attention ? { attention: d.attention } : {}),
    });
  }
  if ([...decided.values()].some(({ d }) => d.outcome === 'PAID')) await faultPoint('charged.before-commit');
  return items.map((i) => out.get(i.orderId) ?? { outcome: 'UNKNOWN_ORDER', calls: [] });
}
