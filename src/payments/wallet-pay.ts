import type { Principal } from '../platform/auth.ts';
import type { Tx } from '../platform/db.ts';
import { invariant } from '../platform/errors.ts';
import { jsonResponse, problemResponse, type KeyedStep } from '../idempotency/index.ts';
import { applyOrderEvent } from '../orders/index.ts';
import { debitForOrder } from '../wallet/index.ts';
import type { PaymentDeps } from './payments.deps.ts';

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
    const detail =
      order?.status === 'CANCELLED' && applied.decision?.to === 'CANCELLED'
        ? 'the reservation expired before payment; the order is cancelled'
        : `order is ${order?.status}, it cannot be paid`;
    return { final: problemResponse('REJECTED', detail, { order_id: orderId, order_status: order?.status }) };
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
  return { final: jsonResponse(200, { order_id: orderId, status: 'PAID' }) };
}
