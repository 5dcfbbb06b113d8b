// Building blocks of a decision, shared by decider.ts and the rows it delegates to (queued.ts,
// compensation.ts). A leaf: it imports only the vocabulary, so the decider's files form no circle.
import { mutant } from '../../platform/mutations.ts';
import { EVENT_STATUSES } from './states.ts';
import type { Decision, Hold, OrderFacts, Outcome, StockMove } from './types.ts';

export function decision(outcome: Outcome, extra: Partial<Decision> = {}): Decision {
  const to = extra.to;
  return { outcome, stock: [], calls: [], emits: to && EVENT_STATUSES.has(to) ? [`ORDER_${to}`] : [], ...extra };
}

export const nothing = (outcome: Outcome, extra: Omit<Partial<Decision>, 'to'> = {}) => decision(outcome, extra);

export const releaseHeld = (holds: readonly Hold[]): StockMove[] =>
  holds.filter((h) => h.status === 'HELD').map((h) => ({ op: 'release', key: h.key }));

/**
 * What a refund does to an order's sold units (issue 48), for every path that refunds a PAID
 * order's money and gives up its units (the operator's refund; a refund the provider made on its
 * own, "already refunded"): back on sale — unless the order's fulfilment is FULFILLED, when they have
 * left: then they stay out of stock as REFUNDED_SHIPPED until an operator's return. A compensation
 * (fulfilment REFUSED) and a late success's refund (the units never confirmed) never shipped.
 */
export function unitsAfterRefund(order: OrderFacts, holds: readonly Hold[]): StockMove[] {
  const shipped = order.fulfilmentStatus === 'FULFILLED' && !mutant('orders.refund.keep-shipped', order.orderId);
  return holds
    .filter((h) => h.status === 'CONFIRMED')
    .map((h) => (shipped ? { op: 'keep_shipped', key: h.key } : { op: 'unconfirm', key: h.key }));
}

/** The hold can no longer be paid for: released, confirmed elsewhere, missing, or past its expiry. */
export function holdIsGone(holds: readonly Hold[], now: Date): boolean {
  return holds.some((h) => h.status !== 'HELD' || (h.expiresAt !== null && h.expiresAt <= now));
}
