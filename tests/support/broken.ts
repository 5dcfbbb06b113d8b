// Test-only broken strategies for the negative controls (C29-14..17). Each removes exactly one
// safeguard of the real code. They live under tests/ so no production path can reach them.
import { inTx, type Db } from '../../src/platform/db.ts';
import { tryConfirm, tryRelease } from '../../src/stock/reservations/finish.ts';
import { findOrder, lockOrder, transition } from '../../src/orders/orders.repo.ts';
import type { ChannelClient } from '../../src/payments/channel.client.ts';

/** C29-14: a charge timeout read as a failure — the order FAILS and its unit is released at once. */
export async function payTreatingTimeoutAsFailure(
  db: Db,
  channel: ChannelClient,
  orderId: string,
  notifyUrl: string,
  now: Date,
): Promise<string> {
  const order = await findOrder(db, orderId);
  if (!order) throw new Error('no order');
  await inTx(db, (tx) => transition(tx, orderId, 'CREATED', 'PAYING', 'pay', now));
  const reply = await channel.charge(orderId, order.amount, notifyUrl);
  if (reply.kind !== 'UNKNOWN') throw new Error(`expected a lost reply, got ${reply.kind}`);
  await inTx(db, async (tx) => {
    await transition(tx, orderId, 'PAYING', 'FAILED', 'BROKEN: timeout treated as failure', now);
    await tryRelease(tx, order.tenantId, order.reservationKey, now);
  });
  return 'FAILED';
}

/** C29-15: NOT_FOUND read as "never charged" — FAILED without closing the charge first. */
export async function convergeWithoutClose(
  db: Db,
  channel: ChannelClient,
  orderId: string,
  now: Date,
): Promise<string> {
  const reply = await channel.query(orderId);
  if (reply.kind !== 'STATUS' || reply.status !== 'NOT_FOUND') throw new Error('expected NOT_FOUND');
  await inTx(db, async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order) throw new Error('no order');
    await transition(tx, orderId, order.status, 'FAILED', 'BROKEN: NOT_FOUND without close', now);
    await tryRelease(tx, order.tenantId, order.reservationKey, now);
  });
  return 'FAILED';
}

/** C29-16: a success written without the prior-state guard, straight to PAID. */
export async function unguardedMarkPaid(db: Db, orderId: string): Promise<void> {
  await db.query(`UPDATE orders SET status = 'PAID', version = version + 1 WHERE order_id = $1`, [orderId]);
}

/** C29-17: confirm called, its answer ignored, PAID written regardless. */
export async function markPaidIgnoringConfirm(db: Db, orderId: string, now: Date): Promise<void> {
  await inTx(db, async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order) throw new Error('no order');
    await tryConfirm(tx, order.tenantId, order.reservationKey, now); // the result is dropped: the bug
    await tx.query(`UPDATE orders SET status = 'PAID', version = version + 1 WHERE order_id = $1`, [orderId]);
  });
}
