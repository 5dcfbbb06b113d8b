// Issue 36's operator rows of the decision table (the console's refund), beside compensation.ts;
// issue 48's return of shipped-and-refunded units to stock.
import { decision, nothing, unitsAfterRefund } from './decision.ts';
import type { Decision, Hold, OrderEvent, OrderFacts } from './types.ts';

/**
 * An operator refunds a PAID order: PAID → REFUNDING with the refund call (the order's fixed
 * refund key, so a repeat or recovery's re-send is the same refund), and the confirmed units back
 * on sale in the same transaction — a REFUNDING order owns no confirmed unit (reconciliation's
 * CONFIRMED = PAID) — unless they shipped (fulfilment FULFILLED): then they stay out of stock as
 * REFUNDED_SHIPPED (unitsAfterRefund, issue 48). A refund already under way or done is a
 * DUPLICATE; anything else is refused.
 */
export function operatorRefund(
  order: OrderFacts,
  holds: readonly Hold[],
  event: Extract<OrderEvent, { type: 'OPERATOR_REFUND' }>,
): Decision {
  if (order.status === 'REFUNDING' || order.status === 'REFUNDED') return nothing('DUPLICATE');
  if (order.status !== 'PAID')
    return nothing('REJECTED', { reason: `order is ${order.status}, it cannot be refunded` });
  return decision('REFUNDING', {
    to: 'REFUNDING',
    reason: `refund by operator ${event.operator}`,
    calls: ['REFUND'],
    stock: unitsAfterRefund(order, holds),
  });
}

/**
 * An operator returns a refunded-after-shipping order's units to stock (issue 48): every
 * REFUNDED_SHIPPED hold back on sale, no transition (the order stays REFUNDING or REFUNDED). Once:
 * an order with none of them (never shipped, never refunded, or returned already) is refused.
 */
export function operatorReturn(
  order: OrderFacts,
  holds: readonly Hold[],
  event: Extract<OrderEvent, { type: 'OPERATOR_RETURN' }>,
): Decision {
  const shipped = holds.filter((h) => h.status === 'REFUNDED_SHIPPED');
  if ((order.status !== 'REFUNDING' && order.status !== 'REFUNDED') || shipped.length === 0)
    return nothing('REJECTED', {
      reason: `order is ${order.status} with no unit refunded after shipping: nothing to return (operator ${event.operator})`,
    });
  return nothing('RETURNED', { stock: shipped.map((h) => ({ op: 'return', key: h.key })) });
}

/**
 * Issue 48: the provider refunded a PAID order on its own (a refund in its dashboard), and says so
 * by notification, query or statement. The money is back already: PAID → REFUNDED at once, no
 * refund call (a second would be refused, or worse). The units move exactly as an operator refund
 * moves them — `unitsAfterRefund`, the one stock rule of every refund (shipped units stay out of stock).
 */
export function providerRefunded(order: OrderFacts, holds: readonly Hold[], cause: string): Decision {
  return decision('REFUNDED', {
    to: 'REFUNDED',
    reason: `${cause}: the provider already refunded the payment`,
    stock: unitsAfterRefund(order, holds),
  });
}
