import { createHmac } from 'node:crypto';
import type { ChargeRecord } from '../ledger.ts';
import type { OutgoingNotification, WireNotification } from '../dialect.ts';
import { signPayload } from '../../platform/signature.ts';

// Stripe's words for the ledger's records (https://docs.stripe.com/api): PaymentIntents, Charges,
// Refunds, balance transactions, errors and signed webhook Events. Pure shapes, no I/O.

/** A form body or query string in Stripe's bracket notation, parsed to nested values. */
export type Form = { [key: string]: string | Form | undefined };

/** `metadata[order_id]=o1&expand[0]=latest_charge` → `{ metadata: { order_id: 'o1' }, expand: { 0: … } }`. */
export function parseForm(text: string): Form {
  const out: Form = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const path = name.split('[').map((part) => part.replace(/]$/, ''));
    let node = out;
    for (const [i, part] of path.entries()) {
      // `expand[]=…` appends: an empty index takes the next free one.
      const key = part === '' ? String(Object.keys(node).length) : part;
      if (i === path.length - 1) {
        node[key] = value;
        break;
      }
      const next = node[key];
      node = typeof next === 'object' ? next : (node[key] = {});
    }
  }
  return out;
}

/** The values of a list parameter (`expand[0]=…&expand[1]=…`). */
export function listOf(value: string | Form | undefined): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string') return [value];
  return Object.values(value).filter((v): v is string => typeof v === 'string');
}

// Ids are derived from the merchant order, so a PaymentIntent id leads back to the ledger's row
// without a table of its own (and survives the PostgreSQL ledger store and a restart).
const hex = (text: string) => Buffer.from(text, 'utf8').toString('hex');
export const paymentIntentId = (merchantOrder: string) => `pi_${hex(merchantOrder)}`;
export const chargeId = (merchantOrder: string) => `ch_${hex(merchantOrder)}`;

/** The merchant order a `pi_…` id names; undefined for anything this double never issued. */
export function orderOfPaymentIntent(id: string): string | undefined {
  const match = /^pi_((?:[0-9a-f]{2})+)$/.exec(id);
  return match ? Buffer.from(match[1]!, 'hex').toString('utf8') : undefined;
}

type PaymentIntentStatus = 'succeeded' | 'requires_payment_method' | 'requires_action' | 'canceled';

export interface PaymentIntentState {
  merchantOrder: string;
  status: PaymentIntentStatus;
  amount: number;
  /** Whether the charge behind it was refunded (shown on the Charge, as Stripe does). */
  refunded?: boolean;
}

export const DECLINE_ERROR = {
  type: 'card_error',
  code: 'card_declined',
  decline_code: 'generic_decline',
  message: 'Your card was declined.',
};

/** The PaymentIntent a ledger record stands for. */
export function stateOf(record: ChargeRecord): PaymentIntentState {
  const amount = record.amount ?? 0;
  const status: PaymentIntentStatus =
    record.status === 'CLOSED' ? 'canceled' : record.status === 'DECLINED' ? 'requires_payment_method' : 'succeeded';
  return { merchantOrder: record.merchantOrder, status, amount, refunded: record.status === 'REFUNDED' };
}

function clientSecret(secret: string, id: string): string {
  return `${id}_secret_${createHmac('sha256', secret).update(id).digest('hex').slice(0, 24)}`;
}

export function chargeObject(state: PaymentIntentState, currency: string): Record<string, unknown> {
  const paid = state.status === 'succeeded';
  return {
    id: chargeId(state.merchantOrder),
    object: 'charge',
    amount: state.amount,
    amount_captured: paid ? state.amount : 0,
    amount_refunded: state.refunded ? state.amount : 0,
    currency,
    paid,
    refunded: state.refunded === true,
    status: paid ? 'succeeded' : 'failed',
    payment_intent: paymentIntentId(state.merchantOrder),
    metadata: { order_id: state.merchantOrder },
  };
}

export function paymentIntentObject(
  state: PaymentIntentState,
  currency: string,
  secret: string,
  expandCharge = false,
): Record<string, unknown> {
  const id = paymentIntentId(state.merchantOrder);
  const charged = state.status === 'succeeded' || state.status === 'requires_payment_method';
  const latest = charged ? (expandCharge ? chargeObject(state, currency) : chargeId(state.merchantOrder)) : null;
  return {
    id,
    object: 'payment_intent',
    amount: state.amount,
    amount_received: state.status === 'succeeded' ? state.amount : 0,
    currency,
    status: state.status,
    client_secret: clientSecret(secret, id),
    latest_charge: latest,
    metadata: { order_id: state.merchantOrder },
    last_payment_error: state.status === 'requires_payment_method' ? DECLINE_ERROR : null,
    next_action: state.status === 'requires_action' ? { type: 'use_stripe_sdk', use_stripe_sdk: {} } : null,
    cancellation_reason: state.status === 'canceled' ? 'abandoned' : null,
    payment_method_types: ['card'],
  };
}

export function refundObject(merchantOrder: string, refundId: string, amount: number, currency: string) {
  return {
    id: refundId,
    object: 'refund',
    amount,
    currency,
    status: 'succeeded',
    payment_intent: paymentIntentId(merchantOrder),
    charge: chargeId(merchantOrder),
    metadata: { order_id: merchantOrder },
  };
}

/** Stripe's error answer: `{error: {type, code, message, …}}`. */
export function stripeError(type: string, message: string, extra: Record<string, unknown> = {}) {
  return { error: { type, message, ...extra } };
}

/**
 * `Stripe-Signature: t=<seconds>,v1=<HMAC-SHA256(secret, "<t>.<body>")>`, Stripe's webhook scheme:
 * the very scheme Flashpay-Signature copies, so it is that signer.
 */
export const stripeSignature = signPayload;

const EVENT_TYPES = {
  CHARGED: 'payment_intent.succeeded',
  DECLINED: 'payment_intent.payment_failed',
  REFUNDED: 'charge.refunded',
} as const;

/** The event id of a notification: stable, so every copy and retry carries the same one. */
export const eventId = (notifyId: string) => `evt_${notifyId.replace(/^ntf_/, '')}`;

/** The Stripe Event a ledger notification becomes. */
export function stripeEvent(n: OutgoingNotification, currency: string, secret: string): Record<string, unknown> {
  const state: PaymentIntentState = {
    merchantOrder: n.merchantOrder,
    amount: n.amount,
    status: n.kind === 'DECLINED' ? 'requires_payment_method' : 'succeeded',
    refunded: n.kind === 'REFUNDED',
  };
  const object =
    n.kind === 'REFUNDED' ? chargeObject(state, currency) : paymentIntentObject(state, currency, secret, false);
  return {
    id: eventId(n.notifyId),
    object: 'event',
    type: EVENT_TYPES[n.kind],
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { object },
  };
}

/** The wire form of an event: fixed body, a signature made fresh for each attempt. */
export function signedEvent(event: Record<string, unknown>, webhookSecret: string): WireNotification {
  const body = JSON.stringify(event);
  return {
    body,
    headers: () => ({ 'content-type': 'application/json', 'stripe-signature': stripeSignature(webhookSecret, body) }),
  };
}
