import type Stripe from 'stripe';
import type { StripeSettings } from '../../platform/provider.config.ts';
import {
  providerNote,
  statementOf,
  type ChannelClient,
  type StatementLine,
  type StatusReply,
} from '../channel.client.ts';
import {
  chargeErrorReply,
  chargeReplyOf,
  intentOfError,
  isUnanswered,
  reasonOf,
  statusOfIntent,
} from './stripe.status.ts';
import { loadStripe, stripeErrors } from './stripe.sdk.ts';

// The Stripe adapter (issue 37) through the official SDK. A charge is a PaymentIntent created and
// confirmed under an Idempotency-Key fixed per order (`pi-<order>`), so a retry is the same
// PaymentIntent; `metadata.order_id` finds it again when its id was lost with the reply.

/** Test-mode default when the pay request names no payment method (a live key refuses it). */
const DEFAULT_PAYMENT_METHOD = 'pm_card_visa';
/** A statement is one bulk read, not a payment call: its own, longer limit. */
const STATEMENT_TIMEOUT_MS = 30_000;
/** The most balance transactions one statement reads; past it reconciliation is told, not misled. */
const MAX_STATEMENT_LINES = 100_000;
/** Ids learnt from charges, so a query skips the search; bounded, oldest forgotten first. */
const MAX_KNOWN_INTENTS = 10_000;

const chargeKeyFor = (orderId: string) => `pi-${orderId}`;

/** The SDK client for these settings: the key, the base URL (a local double in tests), no retries. */
export async function stripeSdk(settings: StripeSettings, timeoutMs: number): Promise<Stripe> {
  const secretKey = stripeKeyOf(settings);
  const base = settings.apiBase ? new URL(settings.apiBase) : undefined;
  const Sdk = await loadStripe();
  return new Sdk(secretKey, {
    timeout: timeoutMs,
    // flashpay's recovery is the retry: a charge that timed out is UNKNOWN, committed, and converges
    // by query, close or webhook. The SDK retrying inside the pay would hold the order PAYING past
    // its timeout and hide from flashpay that an answer was lost.
    maxNetworkRetries: 0,
    telemetry: false,
    ...(base
      ? {
          host: base.hostname,
          port: base.port || (base.protocol === 'http:' ? 80 : 443),
          protocol: base.protocol === 'http:' ? ('http' as const) : ('https' as const),
        }
      : {}),
  });
}

/** The secret key, checked when the adapter is built (a missing key fails the start, not a pay). */
function stripeKeyOf(settings: StripeSettings): string {
  if (!settings.secretKey) throw new Error('FLASHPAY_PROVIDER=stripe needs STRIPE_SECRET_KEY');
  return settings.secretKey;
}

/** Stripe's search syntax for one order's PaymentIntents (quotes are not allowed in order ids). */
const searchQuery = (orderId: string) => `metadata['order_id']:'${orderId.replace(/'/g, "\\'")}'`;

export function stripeClient(settings: StripeSettings, timeoutMs: number): ChannelClient {
  stripeKeyOf(settings);
  let client: Promise<Stripe> | undefined;
  const sdk = () => (client ??= stripeSdk(settings, timeoutMs));
  const known = new Map<string, string>();
  const learn = (orderId: string, id: string) => {
    known.set(orderId, id);
    if (known.size > MAX_KNOWN_INTENTS) known.delete(known.keys().next().value!);
  };

  /**
   * The order's PaymentIntent: retrieved by id when we have it, else searched by metadata (the
   * reply with the id was lost). Stripe's search index may lag a create by seconds; a miss reads as
   * NOT_FOUND, which flashpay answers with a close and, failing that, keeps the order unknown.
   */
  async function find(orderId: string): Promise<Stripe.PaymentIntent | undefined> {
    const id = known.get(orderId);
    if (id) return (await sdk()).paymentIntents.retrieve(id, { expand: ['latest_charge'] });
    const found = await (
      await sdk()
    ).paymentIntents.search({ query: searchQuery(orderId), expand: ['data.latest_charge'] });
    // One PaymentIntent per order (the key is fixed); should there be more, one that took money wins.
    const pi = found.data.find((p) => p.status === 'succeeded') ?? found.data[0];
    if (pi) learn(orderId, pi.id);
    return pi;
  }

  async function status(
    orderId: string,
    act?: (pi: Stripe.PaymentIntent) => Promise<StatusReply>,
  ): Promise<StatusReply> {
    try {
      const pi = await find(orderId);
      if (!pi) return { kind: 'STATUS', status: 'NOT_FOUND' };
      return act ? await act(pi) : statusOfIntent(pi);
    } catch (error) {
      const named = intentOfError(error);
      if (named) return statusOfIntent(named);
      const errors = stripeErrors();
      if (errors && error instanceof errors.StripeInvalidRequestError && error.statusCode === 404)
        return { kind: 'STATUS', status: 'NOT_FOUND' };
      return { kind: 'UNKNOWN', reason: reasonOf(error) };
    }
  }

  return {
    async charge(merchantOrder, amount, _notifyUrl, _customer, paymentMethod) {
      // Stripe notifies its registered webhook endpoint, not a per-charge URL: notifyUrl is not sent.
      try {
        const pi = await (
          await sdk()
        ).paymentIntents.create(
          {
            amount,
            currency: settings.currency,
            confirm: true,
            payment_method: paymentMethod ?? DEFAULT_PAYMENT_METHOD,
            // Confirmed server-side with no return URL: only methods that need no redirect.
            automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
            metadata: { order_id: merchantOrder },
          },
          { idempotencyKey: chargeKeyFor(merchantOrder) },
        );
        learn(merchantOrder, pi.id);
        return chargeReplyOf(pi);
      } catch (error) {
        const pi = intentOfError(error);
        if (pi) learn(merchantOrder, pi.id);
        return chargeErrorReply(error);
      }
    },
    query: (merchantOrder) => status(merchantOrder),
    // Nothing found: nothing to cancel (NOT_FOUND). Stripe cannot block a create still in flight,
    // so a lingering charge may land later; flashpay's late-success path refunds or re-reserves it.
    close: (merchantOrder) =>
      status(merchantOrder, async (pi) => {
        const open = pi.status !== 'succeeded' && pi.status !== 'canceled' && pi.status !== 'processing';
        if (!open) return statusOfIntent(pi);
        return statusOfIntent(await (await sdk()).paymentIntents.cancel(pi.id));
      }),
    async refund(merchantOrder, refundKey, amount) {
      let pi: Stripe.PaymentIntent | undefined;
      try {
        pi = await find(merchantOrder);
      } catch (error) {
        return { kind: 'UNKNOWN', reason: reasonOf(error) };
      }
      if (!pi)
        return {
          kind: 'REFUSED',
          status: 404,
          code: 'resource_missing',
          detail: providerNote('Stripe has no PaymentIntent for this order', 'resource_missing'),
        };
      try {
        const refund = await (
          await sdk()
        ).refunds.create(
          { payment_intent: pi.id, amount, metadata: { order_id: merchantOrder } },
          { idempotencyKey: refundKey },
        );
        if (refund.status === 'failed' || refund.status === 'canceled') {
          const code = `refund_${refund.status}`;
          return {
            kind: 'REFUSED',
            status: 200,
            code,
            detail: providerNote(`Stripe's refund ${refund.id} ${refund.status}`, code),
          };
        }
        return { kind: 'REFUNDED', refundId: refund.id };
      } catch (error) {
        if (isUnanswered(error)) return { kind: 'UNKNOWN', reason: reasonOf(error) };
        const e = error as Stripe.errors.StripeError;
        // Refunded before under another key (in Stripe's dashboard): the money is back already.
        if (e.code === 'charge_already_refunded')
          return { kind: 'REFUNDED', refundId: `already:${pi.id}`, already: true };
        const code = e.code ?? e.type;
        return { kind: 'REFUSED', status: e.statusCode ?? 400, code, detail: providerNote(e.message, code) };
      }
    },
    async statement() {
      const transactions: Stripe.BalanceTransaction[] = [];
      // Paged by the SDK (starting_after); autoPagingToArray stops at 10,000, a statement may not.
      await (
        await sdk()
      ).balanceTransactions
        .list({ limit: 100, expand: ['data.source'] }, { timeout: STATEMENT_TIMEOUT_MS })
        .autoPagingEach((t) => {
          transactions.push(t);
          return transactions.length < MAX_STATEMENT_LINES;
        });
      if (transactions.length >= MAX_STATEMENT_LINES)
        throw new Error(`stripe statement: ${MAX_STATEMENT_LINES} balance transactions or more`);
      return statementOf(await statementLines(await sdk(), transactions));
    },
  };
}

/** Charges and refunds as statement lines, oldest first; other balance transactions are not orders'. */
async function statementLines(sdk: Stripe, transactions: Stripe.BalanceTransaction[]): Promise<StatementLine[]> {
  const lines: StatementLine[] = [];
  const orderOfIntent = new Map<string, string>();
  for (const t of [...transactions].reverse()) {
    const type = t.type === 'charge' || t.type === 'payment' ? 'CHARGE' : t.type === 'refund' ? 'REFUND' : undefined;
    if (!type) continue;
    const source = t.source as Stripe.Charge | Stripe.Refund | string | null;
    if (typeof source !== 'object' || source === null)
      throw new Error(`stripe statement: ${t.id} has no expanded source`);
    let order = source.metadata?.order_id;
    const intent = typeof source.payment_intent === 'string' ? source.payment_intent : source.payment_intent?.id;
    // Stripe does not always copy the PaymentIntent's metadata to its charges and refunds.
    if (!order && intent) {
      order = orderOfIntent.get(intent) ?? (await sdk.paymentIntents.retrieve(intent)).metadata.order_id;
      if (order) orderOfIntent.set(intent, order);
    }
    lines.push({ type, merchant_order: order ?? `stripe:${source.id}`, amount: Math.abs(t.amount), ref: source.id });
  }
  return lines;
}
