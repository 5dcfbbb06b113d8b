// The vocabulary of the decider (orders/decide/decider.ts): the facts it reads, the events it is asked about and
// the decision it answers. Types and closed lists only; the decisions themselves are in orders/decide/decider.ts.
import type { OrderStatus } from './states.ts';

/** The reservation behind an order, as read under its row lock. */
export interface Hold {
  key: string;
  sku: string;
  quantity: number;
  /**
   * MISSING: no reservation row (only a planted fault produces one). REFUNDED_SHIPPED: refunded
   * after its units shipped, still out of stock until an operator returns them (issue 48).
   */
  status: 'HELD' | 'CONFIRMED' | 'RELEASED' | 'REFUNDED_SHIPPED' | 'MISSING';
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
  /** Placed with Prefer: respond-async: its stock lives behind the stock service (queued/pending.ts). */
  queued?: boolean;
  /** The after-PAID saga's fulfilment (seed 002): FULFILLED means the units have shipped (issue 48). */
  fulfilmentStatus?: 'PENDING' | 'FULFILLED' | 'REFUSED';
}

/** A provider answer: through the charge reply, a query, a close, a notification or a refund reply. */
export type ProviderVia = 'charge' | 'query' | 'close' | 'callback' | 'refund';
export type ProviderStatus = 'CHARGED' | 'DECLINED' | 'CLOSED' | 'REFUNDED' | 'REFUND_REFUSED' | 'NOT_FOUND' | 'LOST';

export type OrderEvent =
  /** The buyer asked to pay; `provider`: where the charge goes (recorded on the order, issue 48). */
  | { type: 'PAY_REQUESTED'; provider?: string }
  /** The buyer asked to pay from their wallet: the caller debits in the same transaction (src/payments/wallet-pay.ts). */
  | { type: 'WALLET_PAY_REQUESTED' }
  /** The buyer asked to cancel. */
  | { type: 'CANCEL_REQUESTED' }
  /** Recovery found a CREATED order whose hold is gone. */
  | { type: 'HOLD_EXPIRED' }
  /** The provider said something about the order (LOST: the answer never came). */
  /** `paymentId`: the provider's own id of the payment, recorded by the transition it causes (issue 48). */
  | {
      type: 'PROVIDER_ANSWERED';
      via: ProviderVia;
      status: ProviderStatus;
      amount?: number;
      cause: string;
      paymentId?: string;
    }
  /** The saga (src/saga): the fulfilment provider refused for good; compensation starts. */
  | { type: 'FULFILMENT_REFUSED'; cause: string }
  /** The saga: the compensating refund was confirmed (ok) or cannot be done now. */
  | { type: 'COMPENSATION_REFUND'; ok: boolean; cause: string }
  /** The saga: the refund is confirmed, the confirmed unit(s) go back on sale. */
  | { type: 'COMPENSATION_RELEASE' }
  /** The stock service's answer to a queued order's request (queued.ts). */
  | StockEvent
  /** A wallet pay of a queued order found too low a balance: the units go back through the stock service. */
  | { type: 'WALLET_FUNDS_SHORT' }
  /** An operator refunds a PAID order from the console (issue 36, src/ops): `operator` is their `sub`. */
  | { type: 'OPERATOR_REFUND'; operator: string }
  /** An operator returns the units of an order refunded after shipping to stock (issue 48). */
  | { type: 'OPERATOR_RETURN'; operator: string };

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
  'OPERATOR_REFUND',
  'OPERATOR_RETURN',
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
  // Issue 48, decided before the decider (src/payments/notifications.ts): the order is left as it was.
  /** The notification came from a provider that is not the order's (recorded, else its tenant's). */
  'WRONG_PROVIDER',
  /** The notification's currency is not the provider's configured one (Stripe's `currency`). */
  'CURRENCY_MISMATCH',
  /** The notification names a provider payment id already bound to another order. */
  'PAYMENT_ID_IN_USE',
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
  | 'RELEASING'
  /** Issue 48: shipped-and-refunded units are back on sale. */
  | 'RETURNED';

export type StockMove =
  | { op: 'confirm'; key: string }
  | { op: 'release'; key: string }
  /** A CONFIRMED unit goes back on sale (compensation, after the refund is confirmed). */
  | { op: 'unconfirm'; key: string }
  /** A CONFIRMED unit that shipped stays out of stock, refunded (issue 48): CONFIRMED → REFUNDED_SHIPPED. */
  | { op: 'keep_shipped'; key: string }
  /** An operator's return: a REFUNDED_SHIPPED unit goes back on sale. */
  | { op: 'return'; key: string }
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

export type StockEvent =
  /** Every line is held under the order's line keys (/r1). */
  | { type: 'STOCK_RESERVED' }
  /** Nothing is held: `reason` is SOLD_OUT or USER_LIMIT (with the SKU refused). */
  | { type: 'STOCK_REJECTED'; reason: string }
  /** Every unit of the order is back on sale. */
  | { type: 'STOCK_RELEASED' };
