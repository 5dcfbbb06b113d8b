// What an event does to an order, decided in one pure function (seed 000's effect table).
// `applyOrderEvent` (apply/one.ts) locks the order and its holds, asks `decide`, and applies the
// answer in one transaction; nothing else in the codebase decides an order's next status.
import { mutant } from '../../platform/mutations.ts';
import { isAllowed, type OrderStatus } from './states.ts';
import { lineReservationKeyFor } from '../orders.keys.ts';
import { decideQueued } from './queued.ts';
import { compensation } from './compensation.ts';
import { operatorRefund, operatorReturn, providerRefunded } from './operator.ts';
import { decision, holdIsGone, nothing, releaseHeld } from './decision.ts';

// The vocabulary (facts, events, decisions) lives in types.ts and the helpers that build a decision
// in decision.ts, leaves that queued.ts and compensation.ts share without importing this file back.
export { holdIsGone, unitsAfterRefund } from './decision.ts';
export { EVENT_KINDS, EFFECTS } from './types.ts';
export type {
  Hold,
  OrderFacts,
  ProviderVia,
  ProviderStatus,
  OrderEvent,
  Effect,
  Outcome,
  StockMove,
  ProviderCall,
  Decision,
} from './types.ts';
import type { Decision, Hold, OrderEvent, OrderFacts, Outcome, ProviderVia, StockMove } from './types.ts';

const UNPAID: ReadonlySet<OrderStatus> = new Set(['CREATED', 'PAYING', 'UNKNOWN']);
const SETTLED_PAID: ReadonlySet<OrderStatus> = new Set([
  'PAID',
  'REFUNDING',
  'REFUNDED',
  'COMPENSATING',
  'COMPENSATION_PENDING',
  'COMPENSATED',
]);

function startRefund(outcome: Outcome, reason: string): Decision {
  return decision(outcome, { to: 'REFUNDING', reason, calls: ['REFUND'] });
}

/**
 * Money arrived. PAID only with every unit confirmed: a HELD unit is confirmed, a lost one is
 * re-reserved under the next key (/r2, /r3, …; per line on a multi-line order) and confirmed; when
 * any of them is refused, every move is undone and the whole amount is refunded with the order's
 * fixed refund key.
 */
function charged(order: OrderFacts, holds: readonly Hold[], cause: string): Decision {
  if (SETTLED_PAID.has(order.status)) return nothing('DUPLICATE');
  // PENDING, REJECTED and RELEASING were never sent to the provider: a charge for one is not ours to settle.
  if (order.status === 'PENDING' || order.status === 'REJECTED' || order.status === 'RELEASING')
    return nothing('IGNORED', { attention: `${cause} charged a ${order.status} order` });
  if (order.status === 'FAILED' || order.status === 'CANCELLED')
    return startRefund('REFUNDING_ANOMALY', `${cause} after ${order.status}`);
  if (holds.every((h) => h.status === 'HELD')) {
    return decision('PAID', { to: 'PAID', reason: cause, stock: holds.map((h) => ({ op: 'confirm', key: h.key })) });
  }
  if (mutant('orders.decide.paid-needs-units', order.orderId)) return decision('PAID', { to: 'PAID', reason: cause });
  const attempt = order.reserveAttempt + 1;
  const stock: StockMove[] = holds.map((h) =>
    h.status === 'HELD'
      ? { op: 'confirm', key: h.key }
      : {
          op: 'rereserve',
          key: lineReservationKeyFor(order.orderId, h.line ?? 1, attempt),
          attempt,
          sku: h.sku,
          quantity: h.quantity,
          line: h.line ?? 1,
        },
  );
  const newKeys = stock.filter((m) => m.op === 'rereserve').map((m) => m.key);
  return decision('PAID_REHELD', {
    to: 'PAID',
    reason: `${cause} re-reserved ${newKeys.join(',')}`,
    stock,
    orElse: { ...startRefund('REFUNDING', `${cause} stock lost`), stock: releaseHeld(holds) },
  });
}

function notCharged(order: OrderFacts, holds: readonly Hold[], cause: string): Decision {
  if (order.status === 'PAYING' || order.status === 'UNKNOWN')
    return decision('FAILED', { to: 'FAILED', reason: cause, stock: releaseHeld(holds) });
  if (order.status === 'FAILED') return nothing('DUPLICATE');
  // A decline for an order that was paid or refunded contradicts the ledger we acted on.
  return nothing(
    'IGNORED',
    SETTLED_PAID.has(order.status) ? { attention: `${cause} for a ${order.status} order` } : {},
  );
}

function refunded(order: OrderFacts, holds: readonly Hold[], via: ProviderVia, cause: string): Decision {
  if (order.status === 'REFUNDING') return decision('REFUNDED', { to: 'REFUNDED', reason: cause });
  // The provider refunded a PAID order on its own (its dashboard): converge, with no refund call.
  if (order.status === 'PAID') return providerRefunded(order, holds, cause);
  // An unpaid order was never charged by us: a person must look.
  if (UNPAID.has(order.status) && via !== 'callback') {
    return nothing('IGNORED', {
      attention: 'provider reports REFUNDED for an order we still consider unpaid',
      pending: 'provider says REFUNDED; needs a human',
    });
  }
  return nothing('IGNORED');
}

function providerAnswered(
  order: OrderFacts,
  holds: readonly Hold[],
  e: Extract<OrderEvent, { type: 'PROVIDER_ANSWERED' }>,
): Decision {
  const paidOrRefunded = e.status === 'CHARGED' || e.status === 'REFUNDED';
  if (paidOrRefunded && e.amount !== undefined && e.amount !== order.amount) {
    const verb = e.status === 'CHARGED' ? 'charged' : 'refunded';
    return nothing('AMOUNT_MISMATCH', {
      attention: `${verb} ${e.amount} for an order of ${order.amount}`,
      pending: `amount mismatch (${verb} ${e.amount})`,
    });
  }
  switch (e.status) {
    case 'CHARGED':
      return charged(order, holds, e.cause);
    case 'DECLINED':
    case 'CLOSED':
      return notCharged(order, holds, e.via === 'callback' ? `${e.cause} declined` : `${e.cause} ${e.status}`);
    case 'REFUNDED':
      return refunded(order, holds, e.via, e.cause);
    case 'REFUND_REFUSED':
      return nothing(
        'IGNORED',
        order.status === 'REFUNDING'
          ? { attention: `refund refused by the provider: ${e.cause}`, pending: 'refund refused' }
          : {},
      );
    case 'NOT_FOUND':
      // NOT_FOUND is not "not charged": the charge may still be on its way. Close it; the close decides.
      if (!UNPAID.has(order.status) || order.status === 'CREATED') return nothing('IGNORED');
      if (e.via === 'query' && mutant('orders.decide.not-found-closes', order.orderId))
        return notCharged(order, holds, 'query NOT_FOUND');
      return e.via === 'query'
        ? nothing('PENDING', { calls: ['CLOSE'], pending: 'NOT_FOUND' })
        : nothing('PENDING', { pending: 'NOT_FOUND after close' });
    case 'LOST':
      // The money may have moved: UNKNOWN keeps the unit HELD; recovery converges it by query.
      if (order.status === 'PAYING' && e.via === 'charge' && mutant('orders.decide.lost-is-unknown', order.orderId))
        return notCharged(order, holds, `charge ${e.cause}`);
      if (order.status === 'PAYING' && e.via === 'charge')
        return decision('UNKNOWN', { to: 'UNKNOWN', reason: `charge ${e.cause}` });
      if (order.status === 'REFUNDING') return nothing('PENDING', { pending: `refund ${e.cause}` });
      if (order.status === 'PAYING' || order.status === 'UNKNOWN')
        return nothing('PENDING', { pending: `${e.via} ${e.cause}` });
      return nothing('IGNORED');
  }
}

/**
 * A wallet pay settles at once: every held unit confirmed and PAID in the transaction that debits
 * the wallet (the caller rolls all of it back when the balance is too low). No provider call.
 */
function walletPay(order: OrderFacts, holds: readonly Hold[], now: Date): Decision {
  if (order.status !== 'CREATED') return nothing('REJECTED', { reason: `order is ${order.status}, it cannot be paid` });
  if (holdIsGone(holds, now))
    return decision('REJECTED', { to: 'CANCELLED', reason: 'pay after the hold expired', stock: releaseHeld(holds) });
  return decision('PAID', { to: 'PAID', reason: 'wallet', stock: holds.map((h) => ({ op: 'confirm', key: h.key })) });
}

/**
 * What `event` does to `order` whose holds are `holds`, at `now`. Pure: no I/O, no clock of its
 * own. Every transition it returns is in the state machine (orders/decide/states.ts); a refused event
 * returns no transition and outcome REJECTED.
 */
export function decide(order: OrderFacts, holds: readonly Hold[], event: OrderEvent, now: Date): Decision {
  let d: Decision;
  switch (event.type) {
    case 'PAY_REQUESTED':
      if (order.status !== 'CREATED')
        d = nothing('REJECTED', { reason: `order is ${order.status}, it cannot be paid` });
      // Never charge for a unit that is no longer held: the order is cancelled instead.
      else if (holdIsGone(holds, now))
        d = decision('REJECTED', { to: 'CANCELLED', reason: 'pay after the hold expired', stock: releaseHeld(holds) });
      else d = decision('PAYING', { to: 'PAYING', reason: 'pay', calls: ['CHARGE'] });
      break;
    case 'WALLET_PAY_REQUESTED':
      d = walletPay(order, holds, now);
      break;
    case 'CANCEL_REQUESTED':
    case 'HOLD_EXPIRED':
      if (order.status !== 'CREATED')
        d = nothing('REJECTED', { reason: `order is ${order.status}, it cannot be cancelled` });
      else if (event.type === 'HOLD_EXPIRED' && !holdIsGone(holds, now))
        d = nothing('REJECTED', { reason: 'the hold is still live' });
      else
        d = decision('CANCELLED', {
          to: 'CANCELLED',
          reason: event.type === 'HOLD_EXPIRED' ? 'reservation expired' : 'cancel',
          stock: releaseHeld(holds),
        });
      break;
    case 'PROVIDER_ANSWERED':
      d = providerAnswered(order, holds, event);
      break;
    case 'FULFILMENT_REFUSED':
    case 'COMPENSATION_REFUND':
    case 'COMPENSATION_RELEASE':
      d = compensation(order, holds, event);
      break;
    case 'OPERATOR_REFUND':
      d = operatorRefund(order, holds, event);
      break;
    case 'OPERATOR_RETURN':
      d = operatorReturn(order, holds, event);
      break;
    default:
      d = decideQueued(order, holds, event);
  }
  for (const x of [d, d.orElse])
    if (x?.to && !isAllowed(order.status, x.to))
      throw new Error(`decide: ${order.status} -> ${x.to} is not in the state machine`);
  return d;
}
