// Seed 002's compensation rows of the decision table (docs/saga.md), beside queued.ts.
import { decision, nothing } from './decision.ts';
import type { Decision, Hold, OrderEvent, OrderFacts } from './types.ts';

/**
 * Seed 002's compensation, step by step as the saga's journal drives it: refused → COMPENSATING;
 * the refund first (while it cannot be done: COMPENSATION_PENDING, the unit stays confirmed);
 * only then the unit back on sale → COMPENSATED. Repeats change nothing.
 */
export function compensation(
  order: OrderFacts,
  holds: readonly Hold[],
  event: Extract<OrderEvent, { type: 'FULFILMENT_REFUSED' | 'COMPENSATION_REFUND' | 'COMPENSATION_RELEASE' }>,
): Decision {
  const s = order.status;
  switch (event.type) {
    case 'FULFILMENT_REFUSED':
      if (s === 'PAID')
        return decision('COMPENSATING', { to: 'COMPENSATING', reason: `fulfilment refused: ${event.cause}` });
      return nothing(
        s === 'COMPENSATING' || s === 'COMPENSATION_PENDING' || s === 'COMPENSATED' ? 'DUPLICATE' : 'IGNORED',
      );
    case 'COMPENSATION_REFUND':
      if (s !== 'COMPENSATING' && s !== 'COMPENSATION_PENDING')
        return nothing(s === 'COMPENSATED' ? 'DUPLICATE' : 'IGNORED');
      if (!event.ok) {
        const pending = `refund not done: ${event.cause}`;
        return s === 'COMPENSATING'
          ? decision('COMPENSATION_PENDING', { to: 'COMPENSATION_PENDING', reason: pending, pending })
          : nothing('COMPENSATION_PENDING', { pending });
      }
      return s === 'COMPENSATION_PENDING'
        ? decision('COMPENSATING', { to: 'COMPENSATING', reason: `refund confirmed: ${event.cause}` })
        : nothing('COMPENSATING');
    case 'COMPENSATION_RELEASE':
      // Only once the refund is confirmed (COMPENSATING again); never from COMPENSATION_PENDING.
      if (s === 'COMPENSATED') return nothing('DUPLICATE');
      if (s !== 'COMPENSATING') return nothing('REJECTED', { reason: `order is ${s}, its units cannot be released` });
      return decision('COMPENSATED', {
        to: 'COMPENSATED',
        reason: 'refunded, units released',
        stock: holds.filter((h) => h.status === 'CONFIRMED').map((h) => ({ op: 'unconfirm', key: h.key })),
      });
  }
}
