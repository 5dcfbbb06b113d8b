import type { Order } from '../orders/index.ts';
import type { StepResult } from './saga.runner.ts';

// THE SEAM for "refund = wallet credit for wallet-paid orders" (issue 13): compensation gives the
// money back only through `compensationRefunds`. Today every order is paid at the provider; once
// the wallet lands, its `refund` branches on the order's payment method and credits the wallet
// with the same key (`<order>/refund`), and its `query` looks that transfer up by key.

/** The provider calls compensation needs, structurally (the payments client fits; no import of it). */
export interface ProviderPayments {
  refund(merchantOrder: string, refundKey: string, amount: number): Promise<{ kind: 'REFUNDED'; refundId: string } | { kind: 'REFUSED'; status: number; detail: string } | { kind: 'UNKNOWN'; reason: string }>;
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

export function compensationRefunds(provider: ProviderPayments): CompensationRefunds {
  return {
    async refund(order, key) {
      const reply = await provider.refund(order.orderId, key, order.amount);
      if (reply.kind === 'REFUNDED') return { status: 'DONE', receipt: reply.refundId };
      if (reply.kind === 'REFUSED') return { status: 'FAILED', error: `refused ${reply.status} ${reply.detail}` };
      return { status: 'UNKNOWN', error: reply.reason };
    },
    async query(order) {
      const reply = await provider.query(order.orderId);
      return reply.kind === 'STATUS' && reply.status === 'REFUNDED' ? { status: 'DONE', receipt: 'REFUNDED (query)' } : undefined;
    },
  };
}
