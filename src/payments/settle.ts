import { inTx, type Tx } from '../platform/db.ts';
import { applyOrderEvent, findOrder, type AppliedEvent } from '../orders/index.ts';
import { refundAnswer, statusAnswer, type Answer } from './answers.ts';
import { refundKeyFor } from './channel.client.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { tryRefundToWallet } from './wallet-refund.ts';

/**
 * Makes the provider calls a committed decision asked for (close after NOT_FOUND, the refund with
 * the order's fixed key) and applies each answer through the decider in its own transaction,
 * until no call is left. Returns the last application: its `pending` says why the order is not
 * finished yet. No transaction is open during a call.
 */
export async function followUp(deps: PaymentDeps, orderId: string, applied: AppliedEvent): Promise<AppliedEvent> {
  let last = applied;
  for (const call of applied.calls) {
    let answer: Answer | undefined;
    if (call === 'CLOSE') answer = statusAnswer('close', await deps.channel.close(orderId));
    else if (call === 'REFUND') {
      const order = await findOrder(deps.db, orderId);
      const toWallet =
        order?.status === 'REFUNDING' ? await tryRefundToWallet(deps, orderId, order.tenantId) : undefined;
      if (toWallet) last = toWallet;
      else if (order?.status === 'REFUNDING')
        answer = refundAnswer(await deps.channel.refund(orderId, refundKeyFor(orderId), order.amount));
    }
    // CHARGE is the pay request's own continuation, never a follow-up. settle() follows up in turn.
    if (answer) last = await settle(deps, orderId, answer);
  }
  return last;
}

/** One provider answer, applied in its own transaction (with `within` in the same commit). */
export async function recordAnswer(
  deps: Pick<PaymentDeps, 'db' | 'clock'>,
  orderId: string,
  answer: Answer,
  within?: (tx: Tx, applied: AppliedEvent) => Promise<void>,
): Promise<AppliedEvent> {
  return inTx(deps.db, async (tx) => {
    const result = await applyOrderEvent(tx, orderId, answer, deps.clock.now());
    if (within) await within(tx, result);
    return result;
  });
}

/** One provider answer, applied in its own transaction, then its follow-up calls. */
export async function settle(
  deps: PaymentDeps,
  orderId: string,
  answer: Answer,
  within?: (tx: Tx, applied: AppliedEvent) => Promise<void>,
): Promise<AppliedEvent> {
  return followUp(deps, orderId, await recordAnswer(deps, orderId, answer, within));
}
