import type { Clock } from '../platform/clock.ts';
import { inTx, type Db } from '../platform/db.ts';
import type { Order } from '../orders/index.ts';
import { refundToWallet, walletDebitOf, walletRefundOf } from '../wallet/index.ts';
import type { StepResult } from './saga.runner.ts';

// Compensation gives the money back only through `compensationRefunds`: an order paid from a wallet
// is credited back to that wallet (one transfer whose id is the refund key, in one local commit, so
// its outcome is never unknown), any other order is refunded at the provider with the same key.

/** The provider calls compensation needs, structurally (the payments client fits; no import of it). */
export interface ProviderPayments {
  refund(
    merchantOrder: string,
    refundKey: string,
    amount: number,
  ): Promise<
    | { kind: 'REFUNDED'; refundId: string }
    | { kind: 'REFUSED'; status: number; detail: string }
    | { kind: 'UNKNOWN'; reason: string }
  >;
  query(merchantOrder: string): Promise<{ kind: 'STATUS'; status: string } | { kind: 'UNKNOWN'; reason: string }>;
}

export interface CompensationRefunds {
  refund(order: Order, key: string): Promise<StepResult>;
  /** Resolves a lost answer: DONE when the money is back, undefined when it is not (or cannot be told now). */
  query(order: Order, key: string): Promise<StepResult | undefined>;
}

/**
 * The refund key of a compensation is `<order>/refund` (the contract's), not `rf-<order>`: a PAID
 * order has never been refunded (REFUNDING is reachable only before PAID), so the two keys never
 * both apply to one order, and the provider refunds a charge at most once whatever the key.
 */
export function compensationRefundKey(orderId: string): string {
  return `${orderId}/refund`;
}

export function compensationRefunds(
  provider: ProviderPayments,
  wallet?: { db: Db; clock: Clock },
): CompensationRefunds {
  return {
    async refund(order, key) {
      if (wallet) {
        const credited = await inTx(wallet.db, async (tx) => {
          const debit = await walletDebitOf(tx, order.tenantId, order.orderId);
          if (!debit) return undefined;
          return refundToWallet(
            tx,
            { tenantId: order.tenantId, userId: debit.userId, orderId: order.orderId, amount: debit.amount, key },
            wallet.clock.now(),
          );
        });
        if (credited) return { status: 'DONE', receipt: `wallet ${key} (${credited})` };
      }
      const reply = await provider.refund(order.orderId, key, order.amount);
      if (reply.kind === 'REFUNDED') return { status: 'DONE', receipt: reply.refundId };
      if (reply.kind === 'REFUSED') return { status: 'FAILED', error: `refused ${reply.status} ${reply.detail}` };
      return { status: 'UNKNOWN', error: reply.reason };
    },
    async query(order, key) {
      if (wallet && (await walletRefundOf(wallet.db, order.tenantId, key)))
        return { status: 'DONE', receipt: `wallet ${key}` };
      const reply = await provider.query(order.orderId);
      return reply.kind === 'STATUS' && reply.status === 'REFUNDED'
        ? { status: 'DONE', receipt: 'REFUNDED (query)' }
        : undefined;
    },
  };
}
