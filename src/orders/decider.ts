// What an event does to an order, decided in one pure function (seed 000's effect table).
// `applyOrderEvent` (orders.apply.ts) locks the order and its holds, asks `decide`, and applies the
// answer in one transaction; nothing else in the codebase decides an order's next status.
import { EVENT_STATUSES, isAllowed, type OrderStatus } from './orders.states.ts';
import { lineReservationKeyFor } from './orders.keys.ts';
import { decideQueued, type StockEvent } from './decider.queued.ts';
import { compensation } from './decider.compensation.ts';

/** The reservation behind an order, as read under its row lock. */
export interface Hold {
  key: string;
  sku: string;
  quantity: number;
  /** MISSING: no reservation row (only a planted fault produces one). */
  status: 'HELD' | 'CONFIRMED' | 'RELEASED' | 'MISSING';
  expiresAt: Date | null;
  /** The order line it holds units for (1 when absent: a one-line order). */
  line?: number;
}

/** The part of an order the decider reads. */
export interface OrderFacts {
  orderId: string;
  status: OrderStatus;
  amount: number;
  reserveAttempt: number;
  /** Placed with Prefer: respond-async: its stock lives behind the stock service (orders.queued.ts). */
  queued?: boolean;
}

/** A provider answer: through the charge reply, a query, a close, a notification or a refund reply. */
export type ProviderVia = 'charge' | 'query' | 'close' | 'callback' | 'refund';
export type ProviderStatus = 'CHARGED' | 'DECLINED' | 'CLOSED' | 'REFUNDED' | 'REFUND_REFUSED' | 'NOT_FOUND' | 'LOST';

export type OrderEvent =
  /** The buyer asked to pay. */
  | { type: 'PAY_REQUESTED' }
  /** The buyer asked to pay from their wallet: the caller debits in the same transaction (src/payments/wallet-pay.ts). */
  | { type: 'WALLET_PAY_REQUESTED' }
  /** The buyer asked to cancel. */
  | { type: 'CANCEL_REQUESTED' }
  /** Recovery found a CREATED order whose hold is gone. */
  | { type: 'HOLD_EXPIRED' }
  /** The provider said something about the order (LOST: the answer never came). */
  | { type: 'PROVIDER_ANSWERED'; via: ProviderVia; status: ProviderStatus; amount?: number; cause: string }
  /** The saga (src/saga): the fulfilment provider refused for good; compensation starts. */
  | { type: 'FULFILMENT_REFUSED'; cause: string }
  /** The saga: the compensating refund was confirmed (ok) or cannot be done now. */
  | { type: 'COMPENSATION_REFUND'; ok: boolean; cause: string }
  /** The saga: the refund is confirmed, the confirmed unit(s) go back on sale. */
  | { type: 'COMPENSATION_RELEASE' }
  /** The stock service's answer to a queued order's request (decider.queued.ts). */
  | StockEvent
  /** A wallet pay of a queued order found too low a balance: the units go back through the stock service. */
  | { type: 'WALLET_FUNDS_SHORT' };

export const EVENT_KINDS = [
  'PAY_REQUESTED',
  'WALLET_PAY_REQUESTED',
  'CANCEL_REQUESTED',
  'HOLD_EXPIRED',
  'PROVIDER_ANSWERED',
  'FULFILMENT_REFUSED',
  'COMPENSATION_REFUND',
  'COMPENSATION_RELEASE',
  'STOCK_RESERVED',
  'STOCK_REJECTED',
  'STOCK_RELEASED',
  'WALLET_FUNDS_SHORT',
] as const;

// What a provider message did to an order. Stored with every notification and returned to callers.
export const EFFECTS = [
  'PAID',
  'PAID_REHELD',
  'REFUNDING',
  'REFUNDING_ANOMALY',
  'FAILED',
  'REFUNDED',
  'DUPLICATE',
  'IGNORED',
  'AMOUNT_MISMATCH',
  'UNKNOWN_ORDER',
] as const;
export type Effect = (typeof EFFECTS)[number];

/** What the decision does for the caller that is not a provider-message effect. */
export type Outcome =
  | Effect
  | 'PAYING'
  | 'CANCELLED'
  | 'UNKNOWN'
  | 'REJECTED'
  | 'PENDING'
  | 'COMPENSATING'
  | 'COMPENSATION_PENDING'
  | 'COMPENSATED'
  | 'CREATED'
  | 'RELEASING';

export type StockMove =
  | { op: 'confirm'; key: string }
  | { op: 'release'; key: string }
  /** A CONFIRMED unit goes back on sale (compensation, after the refund is confirmed). */
  | { op: 'unconfirm'; key: string }
  /** Take a new unit under a new key and confirm it at once; may be refused (sold out, limit). */
  | { op: 'rereserve'; key: string; attempt: number; sku: string; quantity: number; line: number };

/** A call to the provider, made by the payments module after the decision committed. */
export type ProviderCall = 'CHARGE' | 'CLOSE' | 'REFUND';

export interface Decision {
  outcome: Outcome;
  /** The guarded transition from the order's current status. */
  to?: OrderStatus;
  reason?: string;
  stock: StockMove[];
  /** Used instead when a `rereserve` move is refused (all of this decision's moves are undone); its reason gets the refusal appended. */
  orElse?: Decision;
  /** Provider calls to make after commit, in order. */
  calls: ProviderCall[];
  /** Outbox events the transition emits (same transaction). */
  emits: string[];
  /** Contradicts what we know: recorded on the order for a person. */
  attention?: string;
  /** The order is still unfinished after this event, and why. */
  pending?: string;
}

const UNPAID: ReadonlySet<OrderStatus> = new Set(['CREATED', 'PAYING', 'UNKNOWN']);
const SETTLED_PAID: ReadonlySet<OrderStatus> = new Set([
  'PAID',
  'REFUNDING',
  'REFUNDED',
  'COMPENSATING',
  'COMPENSATION_PENDING',
  'COMPENSATED',
]);

export function decision(outcome: Outcome, extra: Partial<Decision> = {}): Decision {
  const to = extra.to;
  return { outcome, stock: [], calls: [], emits: to && EVENT_STATUSES.has(to) ? [`ORDER_${to}`] : [], ...extra };
}

export const nothing = (outcome: Outcome, extra: Omit<Partial<Decision>, 'to'> = {}) => decision(outcome, extra);

export const releaseHeld = (holds: readonly Hold[]): StockMove[] =>
  holds.filter((h) => h.status === 'HELD').map((h) => ({ op: 'release', key: h.key }));

/** The hold can no longer be paid for: released, confirmed elsewhere, missing, or past its expiry. */
export function holdIsGone(holds: readonly Hold[], now: Date): boolean {
  return holds.some((h) => h.status !== 'HELD' || (h.expiresAt !== null && h.expiresAt <= now));
}

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

function refunded(order: OrderFacts, via: ProviderVia, cause: string): Decision {
  if (order.status === 'REFUNDING') return decision('REFUNDED', { to: 'REFUNDED', reason: cause });
  // We never refund a PAID order, and an unpaid one was never charged by us: a person must look.
  if (order.status === 'PAID') return nothing('IGNORED', { attention: 'REFUNDED notification for a PAID order' });
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
      return refunded(order, e.via, e.cause);
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
      return e.via === 'query'
        ? nothing('PENDING', { calls: ['CLOSE'], pending: 'NOT_FOUND' })
        : nothing('PENDING', { pending: 'NOT_FOUND after close' });
    case 'LOST':
      // The money may have moved: UNKNOWN keeps the unit HELD; recovery converges it by query.
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
 * own. Every transition it returns is in the state machine (orders.states.ts); a refused event
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
    default:
      d = decideQueued(order, holds, event);
  }
  for (const x of [d, d.orElse])
    if (x?.to && !isAllowed(order.status, x.to))
      throw new Error(`decide: ${order.status} -> ${x.to} is not in the state machine`);
  return d;
}
