// Test-only broken strategies and plants for the reconciliation's negative controls
// (tests/reconcile/classes.test.ts). Each strategy is the real code with exactly one
// safeguard removed, and lives under tests/ so no production path can reach it. The plants that no
// strategy can reach (a second line in the provider's own books) write the broken state directly.
import { randomBytes } from 'node:crypto';
import { createPgLedger } from '../../src/channel/index.ts';
import { reserve } from '../../src/stock/reservations/repo.ts';
import { tryConfirm, tryRelease } from '../../src/stock/reservations/finish.ts';
import { findOrder, lockOrder, reservationKeyFor, transition } from '../../src/orders/orders.repo.ts';
import { createOrder } from '../../src/orders/orders.service.ts';
import type { Order } from '../../src/orders/orders.types.ts';
import type { OrderStatus } from '../../src/orders/decide/states.ts';
import type { Principal } from '../../src/platform/auth.ts';
import { inTx, type Db } from '../../src/platform/db.ts';
import type { ChannelClient } from '../../src/payments/channel.client.ts';
import { applyOrderEvent } from '../../src/orders/index.ts';
import { freshDatabase, type TestDatabase } from './db.ts';
import { startPaymentStack, type PaymentStack } from './payments.ts';
import type { StackOptions } from './stack.ts';

async function orderOf(db: Db, orderId: string): Promise<Order> {
  const order = await findOrder(db, orderId);
  if (!order) throw new Error(`no order ${orderId}`);
  return order;
}

async function move(
  db: Db,
  orderId: string,
  from: OrderStatus,
  to: OrderStatus,
  reason: string,
  now: Date,
): Promise<void> {
  const moved = await inTx(db, (tx) => transition(tx, orderId, from, to, reason, now));
  if (!moved.ok) throw new Error(`plant: ${orderId} is not ${from}`);
}

/** cancelOrder minus its tryRelease: CREATED → CANCELLED and the unit stays HELD, off sale for good. */
export async function cancelWithoutRelease(db: Db, orderId: string, now: Date): Promise<void> {
  await move(db, orderId, 'CREATED', 'CANCELLED', 'BROKEN: cancel without release', now);
}

/** Pay whose decline handling forgets the release: the decider's FAILED decision minus its release move. */
export async function payForgettingReleaseOnDecline(
  db: Db,
  channel: ChannelClient,
  orderId: string,
  notifyUrl: string,
  now: Date,
): Promise<void> {
  const order = await orderOf(db, orderId);
  await move(db, orderId, 'CREATED', 'PAYING', 'pay', now);
  const reply = await channel.charge(orderId, order.amount, notifyUrl);
  if (reply.kind !== 'DECLINED') throw new Error(`plant: expected a decline, got ${reply.kind}`);
  await move(db, orderId, 'PAYING', 'FAILED', 'BROKEN: declined, unit not released', now);
}

/**
 * Pay that confirms the unit when it starts, before the provider has answered. The decline is then
 * applied by the real decider, whose release finds nothing HELD: the unit stays sold.
 */
export async function payConfirmingFirst(
  db: Db,
  channel: ChannelClient,
  orderId: string,
  notifyUrl: string,
  now: Date,
): Promise<void> {
  const order = await orderOf(db, orderId);
  await inTx(db, async (tx) => {
    await tryConfirm(tx, order.tenantId, order.reservationKey, now); // BROKEN: confirmed before the money moved
    await transition(tx, orderId, 'CREATED', 'PAYING', 'pay', now);
  });
  const reply = await channel.charge(orderId, order.amount, notifyUrl);
  if (reply.kind !== 'DECLINED') throw new Error(`plant: expected a decline, got ${reply.kind}`);
  await inTx(db, (tx) =>
    applyOrderEvent(
      tx,
      orderId,
      { type: 'PROVIDER_ANSWERED', via: 'charge', status: 'DECLINED', cause: 'charge' },
      now,
    ),
  );
}

/** "Buy now": the unit confirmed when the order is created, before any payment. */
export async function confirmAtCreate(db: Db, orderId: string, now: Date): Promise<void> {
  const order = await orderOf(db, orderId);
  const confirmed = await inTx(db, (tx) => tryConfirm(tx, order.tenantId, order.reservationKey, now));
  if (!confirmed) throw new Error(`plant: ${orderId} has no HELD reservation`);
}

/** The CHARGED decision with its confirm check inverted: the unit is confirmed, and the order refunds as if it were lost. */
export async function refundDespiteConfirm(db: Db, orderId: string, now: Date): Promise<void> {
  await inTx(db, async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order || !(await tryConfirm(tx, order.tenantId, order.reservationKey, now)))
      throw new Error(`plant: cannot confirm ${orderId}`);
    const moved = await transition(
      tx,
      orderId,
      order.status,
      'REFUNDING',
      'BROKEN: refunding although the confirm succeeded',
      now,
    );
    if (!moved.ok) throw new Error(`plant: ${orderId} did not move to REFUNDING`);
  });
}

/** sendRefund reading a lost reply as success: REFUNDING → REFUNDED with nothing refunded at the provider. */
export async function markRefundedOnLostReply(db: Db, orderId: string, now: Date): Promise<void> {
  await move(db, orderId, 'REFUNDING', 'REFUNDED', 'BROKEN: lost refund reply read as refunded', now);
}

/** C29-17, through the real transition (so the event is written): the confirm's answer is dropped. */
export async function markPaidIgnoringConfirm(db: Db, orderId: string, now: Date): Promise<void> {
  await inTx(db, async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order) throw new Error(`no order ${orderId}`);
    await tryConfirm(tx, order.tenantId, order.reservationKey, now); // the result is dropped: the bug
    const moved = await transition(tx, orderId, order.status, 'PAID', 'BROKEN: confirm result ignored', now);
    if (!moved.ok) throw new Error(`plant: ${orderId} did not move to PAID`);
  });
}

/**
 * C29-19: PAID by a dual write. The success commits the confirm and the status but no outbox row;
 * the direct call to the consumer that was to follow never happens (the process died in between).
 */
export async function markPaidByDualWrite(db: Db, orderId: string, now: Date): Promise<void> {
  await inTx(db, async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order || !(await tryConfirm(tx, order.tenantId, order.reservationKey, now)))
      throw new Error(`plant: cannot confirm ${orderId}`);
    const row = await tx.query<{ version: number }>(
      `UPDATE orders SET status = 'PAID', version = version + 1, updated_at = $2 WHERE order_id = $1 RETURNING version`,
      [orderId, now],
    );
    await tx.query(
      `INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at) VALUES ($1, $2, 'PAID', $3, 'BROKEN: dual write', $4)`,
      [orderId, order.status, row.rows[0]?.version, now],
    );
  });
}

/** tryRehold run for an order whose first confirm succeeded: a second unit is sold that no order points at. */
export async function reholdDespiteConfirm(db: Db, orderId: string, now: Date): Promise<void> {
  const order = await orderOf(db, orderId);
  await inTx(db, async (tx) => {
    const key = reservationKeyFor(orderId, order.reserveAttempt + 1);
    const [held] = await reserve(
      tx,
      [{ tenantId: order.tenantId, key, userId: order.userId, sku: order.sku, quantity: order.quantity }],
      now,
    );
    if (held?.outcome !== 'HELD' || !(await tryConfirm(tx, order.tenantId, key, now)))
      throw new Error('plant: no unit to re-hold');
    // BROKEN: the order row is not pointed at the new key (setReservation skipped), and it did not need one.
  });
}

class RolledBack extends Error {}

/**
 * The provider called inside the transaction that creates the order (seed 000's atomic phases
 * ignored), which then rolls back: the provider keeps a charge for an order id we never committed.
 * Returns that id.
 */
export async function chargeInsideOrderTransaction(
  db: Db,
  channel: ChannelClient,
  principal: Principal,
  sku: string,
  notifyUrl: string,
  now: Date,
): Promise<string> {
  let charged: string | undefined;
  try {
    await inTx(db, async (tx) => {
      const outcome = await createOrder(tx, principal, sku, 1, now);
      if (outcome.kind !== 'CREATED') throw new Error(`plant: ${outcome.kind}`);
      const reply = await channel.charge(outcome.order.orderId, outcome.order.amount, notifyUrl);
      if (reply.kind !== 'CHARGED') throw new Error(`plant: expected a charge, got ${reply.kind}`);
      charged = outcome.order.orderId;
      throw new RolledBack('a later statement of the same transaction failed');
    });
  } catch (error) {
    if (!(error instanceof RolledBack)) throw error;
  }
  if (!charged) throw new Error('plant: nothing was charged');
  return charged;
}

/** A line written straight into a pg-ledger channel's books: a state its HTTP rules never produce. */
export async function plantLedgerLine(
  ledger: TestDatabase,
  type: 'CHARGE' | 'REFUND',
  merchantOrder: string,
  amount: number,
): Promise<void> {
  await ledger.pool.query('INSERT INTO channel_lines (type, merchant_order, amount, ref) VALUES ($1, $2, $3, $4)', [
    type,
    merchantOrder,
    amount,
    `planted_${randomBytes(6).toString('hex')}`,
  ]);
}

export interface LedgerPaymentStack extends PaymentStack {
  /** The channel's own database (channel_charges, channel_lines). */
  ledger: TestDatabase;
}

/**
 * startPaymentStack with the channel's ledger in PostgreSQL (createPgLedger on its own fresh
 * database) instead of in memory, so a test can write into the provider's books. The helpers
 * mirror tests/support/payments.ts; only the channel's store differs.
 */
export async function startLedgerPaymentStack(options: StackOptions = {}): Promise<LedgerPaymentStack> {
  const ledger = await freshDatabase({ migrated: false, poolSize: 5 });
  const stack = await startPaymentStack({ ...options, channelStore: await createPgLedger(ledger.pool) });
  return {
    ...stack,
    ledger,
    async close() {
      await stack.close();
      await ledger.drop();
    },
  };
}

/** A cancel written straight to the table (no transition(), so no outbox row), releasing the unit. */
export async function cancelWithoutOutbox(db: Db, orderId: string, now: Date): Promise<void> {
  await inTx(db, async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order) throw new Error('no order');
    await tx.query(`UPDATE orders SET status = 'CANCELLED', version = version + 1 WHERE order_id = $1`, [orderId]);
    await tryRelease(tx, order.tenantId, order.reservationKey, now);
  });
}
