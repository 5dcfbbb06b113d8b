import type { Principal } from '../platform/auth.ts';
import type { Tx } from '../platform/db.ts';
import { AppError, invariant } from '../platform/errors.ts';
import { jsonResponse, problemResponse, type KeyedStep, type StoredResponse } from '../idempotency/index.ts';
import { applyOrderEvent, applyOrderEvents, visibleTo, type AppliedEvent } from '../orders/index.ts';
import { debitForOrder, debitForOrders, type OrderDebit } from '../wallet/index.ts';
import type { PaymentDeps } from './payments.deps.ts';

const paid = (orderId: string) => jsonResponse(200, { order_id: orderId, status: 'PAID' });

/** The answer to a wallet pay the decider refused (the order is not CREATED, or its hold expired). */
function refused(orderId: string, applied: AppliedEvent): StoredResponse {
  const order = applied.order;
  const detail =
    order?.status === 'CANCELLED' && applied.decision?.to === 'CANCELLED'
      ? 'the reservation expired before payment; the order is cancelled'
      : `order is ${order?.status}, it cannot be paid`;
  return problemResponse('REJECTED', detail, { order_id: orderId, order_status: order?.status });
}

/**
 * Pay from the wallet, in ONE transaction with the idempotency key (seed 004): the decider
 * confirms every held unit and makes the order PAID with its outbox event; the debit follows in the
 * same transaction (lock order: order → reservations → SKUs → wallet accounts). Too low a balance
 * rolls all of it back to a savepoint: the order stays CREATED, its units HELD, no money moves,
 * and the refusal is the key's final answer. No provider is called, so nothing is ever UNKNOWN.
 */
export async function beginWalletPay(
  deps: PaymentDeps,
  tx: Tx,
  principal: Principal,
  orderId: string,
): Promise<KeyedStep> {
  const now = deps.clock.now();
  await tx.query('SAVEPOINT wallet_pay');
  const applied = await applyOrderEvent(tx, orderId, { type: 'WALLET_PAY_REQUESTED' }, now, { visibleTo: principal });
  const order = applied.order;
  if (!order || applied.outcome !== 'PAID') {
    await tx.query('RELEASE SAVEPOINT wallet_pay');
    return { final: refused(orderId, applied) };
  }
  const debited = await debitForOrder(
    tx,
    { tenantId: order.tenantId, userId: order.userId },
    orderId,
    order.amount,
    now,
  );
  if (debited === 'INSUFFICIENT_FUNDS') {
    await tx.query('ROLLBACK TO SAVEPOINT wallet_pay');
    await tx.query('RELEASE SAVEPOINT wallet_pay');
    // A queued order gives its units back through the stock service: RELEASING, then CANCELLED.
    if (
      order.queued &&
      (await applyOrderEvent(tx, orderId, { type: 'WALLET_FUNDS_SHORT' }, now)).outcome === 'RELEASING'
    ) {
      return { final: jsonResponse(202, { order_id: orderId, status: 'RELEASING' }) };
    }
    return {
      final: problemResponse('INSUFFICIENT_FUNDS', `the wallet holds less than ${order.amount}`, {
        order_id: orderId,
        amount: order.amount,
      }),
    };
  }
  // The order was CREATED under its lock a moment ago, so no debit of it can exist yet.
  invariant(debited === 'DONE', `wallet debit of ${orderId}: ${debited}`);
  await tx.query('RELEASE SAVEPOINT wallet_pay');
  return { final: paid(orderId) };
}

/**
 * beginWalletPay for a group of pays sharing one transaction (pay.claims.ts groupClaims, issue
 * 38 item 3): their orders made PAID set-based (applyOrderEvents), then every debit in one
 * round trip (debitForOrders). All or nothing: an order the buyer may not see, a wallet too low,
 * an amount no wallet holds — the call throws, the group rolls back, and each pay goes alone
 * (beginWalletPay), where it meets its own answer (404, 409 INSUFFICIENT_FUNDS, a queued order's
 * RELEASING). No savepoint: the group's rollback is the savepoint.
 */
export async function beginWalletPays(
  deps: PaymentDeps,
  tx: Tx,
  pays: ReadonlyArray<{ principal: Principal; orderId: string }>,
): Promise<KeyedStep[]> {
  const now = deps.clock.now();
  const items = pays.map((p) => ({ orderId: p.orderId, event: { type: 'WALLET_PAY_REQUESTED' as const } }));
  const applied = await applyOrderEvents(tx, items, now);
  const debits: OrderDebit[] = [];
  const steps = pays.map((p, i): KeyedStep => {
    const { order, outcome } = applied[i]!;
    if (!visibleTo(order, p.principal)) throw new AppError('ORDER_NOT_FOUND', `no order ${p.orderId}`);
    if (outcome !== 'PAID') return { final: refused(p.orderId, applied[i]!) };
    debits.push({ tenantId: order.tenantId, userId: order.userId, orderId: p.orderId, amount: order.amount });
    return { final: paid(p.orderId) };
  });
  await debitForOrders(tx, debits, now);
  return steps;
}
