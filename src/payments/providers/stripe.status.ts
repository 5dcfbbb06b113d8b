import type Stripe from 'stripe';
import { stripeErrors } from './stripe.sdk.ts';
import type { ChargeReply, StatusReply } from '../channel.client.ts';

// Stripe's PaymentIntent statuses and errors in flashpay's words. The one rule that matters: an
// answer we did not get, or one that says nothing about the payment (a timeout, a connection
// error, a 5xx, a 429), is UNKNOWN — the money may have moved — never a failure.

/** Statuses in which the PaymentIntent may still move money: the order waits (UNKNOWN). */
const PENDING = new Set(['processing', 'requires_action', 'requires_confirmation', 'requires_capture']);

function chargeOf(pi: Stripe.PaymentIntent): Stripe.Charge | undefined {
  return typeof pi.latest_charge === 'object' && pi.latest_charge !== null ? pi.latest_charge : undefined;
}

/** Refunded: a succeeded PaymentIntent whose charge has been refunded in full. */
function refunded(pi: Stripe.PaymentIntent): boolean {
  const charge = chargeOf(pi);
  return (
    charge !== undefined &&
    (charge.refunded || (charge.amount_refunded > 0 && charge.amount_refunded >= pi.amount_received))
  );
}

/** A PaymentIntent as a query's answer (its latest charge expanded, to see a refund). */
export function statusOfIntent(pi: Stripe.PaymentIntent): StatusReply {
  const known = (status: 'CHARGED' | 'DECLINED' | 'CLOSED' | 'REFUNDED', amount = pi.amount): StatusReply => ({
    kind: 'STATUS',
    status,
    amount,
    txn: pi.id,
  });
  if (pi.status === 'succeeded') return known(refunded(pi) ? 'REFUNDED' : 'CHARGED', pi.amount_received);
  if (pi.status === 'canceled') return known('CLOSED');
  // requires_payment_method after a failed confirm is a decline; without an error it was never tried.
  if (pi.status === 'requires_payment_method' && pi.last_payment_error) return known('DECLINED');
  return { kind: 'UNKNOWN', reason: `payment intent ${pi.status}`, pendingAtProvider: pi.status };
}

/** A PaymentIntent as a charge's answer. */
export function chargeReplyOf(pi: Stripe.PaymentIntent): ChargeReply {
  if (pi.status === 'succeeded') return { kind: 'CHARGED', txn: pi.id };
  if (pi.status === 'canceled') return { kind: 'CLOSED', txn: pi.id };
  if (pi.status === 'requires_payment_method' && pi.last_payment_error) return { kind: 'DECLINED', txn: pi.id };
  if (pi.status === 'requires_action')
    return {
      kind: 'UNKNOWN',
      reason: 'requires_action',
      action: { type: 'REQUIRES_ACTION', ...(pi.client_secret ? { client_secret: pi.client_secret } : {}) },
    };
  return { kind: 'UNKNOWN', reason: PENDING.has(pi.status) ? pi.status : `payment intent ${pi.status}` };
}

/**
 * Whether an error says nothing about the payment: no answer (timeout, connection), Stripe's own
 * trouble (5xx, api_error) or a rate limit (429). Anything else is an answer Stripe gave.
 */
export function isUnanswered(error: unknown): boolean {
  const E = stripeErrors();
  if (!E || !(error instanceof E.StripeError)) return true;
  if (error instanceof E.StripeConnectionError || error instanceof E.StripeAPIError) return true;
  if (error instanceof E.StripeRateLimitError) return true;
  return error.statusCode === undefined || error.statusCode >= 500 || error.statusCode === 429;
}

/** A short, secret-free reason for an UNKNOWN (never the request, never a key). */
export function reasonOf(error: unknown): string {
  const E = stripeErrors();
  if (E && error instanceof E.StripeError)
    return `stripe ${error.rawType ?? error.type}${error.statusCode ? ` ${error.statusCode}` : ''}${error.code ? ` ${error.code}` : ''}`;
  return `io error (${(error as Error).name ?? 'unknown'})`;
}

/** The PaymentIntent an error names (a decline, a refused cancel), as Stripe sent it. */
export function intentOfError(error: unknown): Stripe.PaymentIntent | undefined {
  const E = stripeErrors();
  if (!E || !(error instanceof E.StripeError)) return undefined;
  const raw = error.raw as { payment_intent?: Stripe.PaymentIntent } | undefined;
  return raw?.payment_intent?.object === 'payment_intent' ? raw.payment_intent : undefined;
}

/**
 * Refusals of the request's own parameters that no attempt under the same key can have passed: the
 * same amount was refused every time, so no money moved. A decline, never "ask again".
 */
const REFUSED_REQUESTS: ReadonlyMap<string, string> = new Map([
  ['amount_too_large', 'the amount is more than Stripe accepts for one charge'],
  ['amount_too_small', 'the amount is less than Stripe accepts for one charge'],
]);

/** A charge refused with an answer: a card decline, a canceled PaymentIntent, an amount Stripe refuses; else UNKNOWN. */
export function chargeErrorReply(error: unknown): ChargeReply {
  if (isUnanswered(error)) return { kind: 'UNKNOWN', reason: reasonOf(error) };
  const pi = intentOfError(error);
  if (pi) return chargeReplyOf(pi);
  const E = stripeErrors();
  if (E && error instanceof E.StripeCardError) return { kind: 'DECLINED' };
  const code = E && error instanceof E.StripeInvalidRequestError ? (error.code ?? '') : '';
  const refused = REFUSED_REQUESTS.get(code);
  if (refused) return { kind: 'DECLINED', reason: `${refused} (${code})` };
  // Any other refusal (a bad key, an idempotency conflict) says nothing certain about an earlier
  // attempt under the same key: the query decides.
  return { kind: 'UNKNOWN', reason: reasonOf(error) };
}
