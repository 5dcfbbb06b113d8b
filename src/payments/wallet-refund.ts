import { inTx } from '../platform/db.ts';
import { applyOrderEvent, type AppliedEvent } from '../orders/index.ts';
import { refundToWallet, walletDebitOf } from '../wallet/index.ts';
import { refundKeyFor } from './channel.client.ts';
import type { PaymentDeps } from './payments.deps.ts';

/**
 * The refund a decision asked for, when the order was paid from a wallet: the money goes back to
 * that wallet, in the transaction that makes the order REFUNDED, once per the order's refund key.
 * Undefined when the order was not wallet-paid (the provider refunds it). Lock order as everywhere:
 * the order (and its holds) first, the wallet accounts last.
 */
export async function tryRefundToWallet(
  deps: PaymentDeps,
  orderId: string,
  tenantId: string,
): Promise<AppliedEvent | undefined> {
  return inTx(deps.db, async (tx) => {
    const debit = await walletDebitOf(tx, tenantId, orderId);
    if (!debit) return undefined;
    const applied = await applyOrderEvent(
      tx,
      orderId,
      { type: 'PROVIDER_ANSWERED', via: 'refund', status: 'REFUNDED', amount: debit.amount, cause: 'wallet refund' },
      deps.clock.now(),
    );
    if (applied.outcome === 'REFUNDED')
      await refundToWallet(
        tx,
        { tenantId, userId: debit.userId, orderId, amount: debit.amount, key: refundKeyFor(orderId) },
        deps.clock.now(),
      );
    return applied;
  });
}
