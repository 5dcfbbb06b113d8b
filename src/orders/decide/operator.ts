// Issue 36's operator rows of the decision table (the console's refund), beside compensation.ts.
import { decision, nothing } from './decision.ts';
import type { Decision, Hold, OrderEvent, OrderFacts } from './types.ts';

/**
 * An operator refunds a PAID order: PAID → REFUNDING with the refund call (the order's fixed
 * refund key, so a repeat or recovery's re-send is the same refund), and the confirmed units back
 * on sale in the same transaction — a REFUNDING order owns no confirmed unit (reconciliation's
 * CONFIRMED = PAID). A refund already under way or done is a DUPLICATE; anything else is refused.
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
    stock: holds.filter((h) => h.status === 'CONFIRMED').map((h) => ({ op: 'unconfirm', key: h.key })),
  });
}

/**
 * Issue 48: the provider refunded a PAID order on its own (a refund in its dashboard), and says so
 * by notification, query or statement. The money is back already: PAID → REFUNDED at once, no
 * refund call (a second would be refused, or worse). The units move exactly as an operator refund
 * moves them — taken from `operatorRefund`, so its stock rule is the one rule for both.
 */
export function providerRefunded(order: OrderFacts, holds: readonly Hold[], cause: string): Decision {
  const asOperator = operatorRefund(order, holds, { type: 'OPERATOR_REFUND', operator: 'provider' });
  return decision('REFUNDED', {
    to: 'REFUNDED',
    reason: `${cause}: the provider already refunded the payment`,
    stock: asOperator.stock,
  });
}
