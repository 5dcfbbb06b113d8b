// Queued orders (seed 004): what the stock service's answers, and a wallet too low to pay a queued
// order, do. Kept apart from orders/decide/decider.ts so the seed-000 table stays readable; `decide` delegates here.
import { decision, nothing, releaseHeld } from './decision.ts';
import type { Decision, Hold, OrderFacts, StockEvent } from './types.ts';

/** The stock request an entry into this status asks for (written to the order's stock outbox in the same transaction). */
export const STOCK_REQUEST_ON_ENTRY = { RELEASING: 'STOCK_RELEASE_REQUESTED' } as const;

export function decideQueued(
  order: OrderFacts,
  holds: readonly Hold[],
  event: StockEvent | { type: 'WALLET_FUNDS_SHORT' },
): Decision {
  // A result for an order that already moved changes nothing; the caller records it as IGNORED.
  const moved = (): Decision => nothing('IGNORED', { reason: `${event.type} for a ${order.status} order` });
  switch (event.type) {
    case 'STOCK_RESERVED':
      return order.status === 'PENDING' ? decision('CREATED', { to: 'CREATED', reason: 'stock reserved' }) : moved();
    case 'STOCK_REJECTED':
      return order.status === 'PENDING'
        ? decision('REJECTED', { to: 'REJECTED', reason: `stock rejected: ${event.reason}` })
        : moved();
    case 'STOCK_RELEASED':
      // Only RELEASING enters CANCELLED this way; anything still HELD under our lock goes back too.
      return order.status === 'RELEASING'
        ? decision('CANCELLED', { to: 'CANCELLED', reason: 'stock released', stock: releaseHeld(holds) })
        : moved();
    case 'WALLET_FUNDS_SHORT':
      if (order.status !== 'CREATED' || !order.queued)
        return nothing('REJECTED', { reason: `order is ${order.status}, nothing to release` });
      return decision('RELEASING', {
        to: 'RELEASING',
        reason: 'wallet balance too low',
        emits: [STOCK_REQUEST_ON_ENTRY.RELEASING],
      });
  }
}
