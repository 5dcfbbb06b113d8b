import type { FastifyReply, FastifyRequest } from 'fastify';
import { perform, type ChannelDeps } from '../channel.routes.ts';
import type { FaultHits, FaultOp } from '../faults.ts';
import type { Outcome } from '../ledger.ts';
import { paymentIntentObject, stripeError, type Form, type PaymentIntentState } from './stripe.wire.ts';

// What the Stripe double keeps beside the ledger: answers by Idempotency-Key, PaymentIntents that
// wait for the buyer (3-D Secure) and the registered webhook endpoints. In memory: a double's
// restart forgets them, as a test that restarts it expects.

/** Stripe keeps keys for 24 hours; a double keeps the newest ones, enough for any test run. */
const MAX_IDEMPOTENCY_KEYS = 10_000;

export interface StripeDoubleOptions {
  webhookSecret: string;
  /** When set, every API request needs `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** A webhook endpoint known from the start (else one registered through the API). */
  webhookUrl?: string;
  currency?: string;
}

interface WebhookEndpoint {
  id: string;
  url: string;
  enabled_events: string[];
}

export class StripeDoubleState {
  readonly currency: string;
  readonly endpoints: WebhookEndpoint[] = [];
  /** PaymentIntents in `requires_action`, by merchant order: no ledger row until the buyer confirms. */
  readonly awaitingAction = new Map<string, { amount: number }>();
  /** Merchant orders whose next PaymentIntent asks for 3-D Secure (a test helper sets them). */
  readonly requireAction = new Set<string>();
  private readonly answers = new Map<string, { digest: string; outcome: Outcome }>();

  constructor(readonly options: StripeDoubleOptions) {
    this.currency = options.currency ?? 'usd';
    if (options.webhookUrl)
      this.endpoints.push({ id: 'we_configured', url: options.webhookUrl, enabled_events: ['*'] });
  }

  /** Where a new charge's notifications go: the first endpoint registered; '' (none sent) without one. */
  notifyUrl(): string {
    return this.endpoints[0]?.url ?? '';
  }

  pi(state: PaymentIntentState, expandCharge = false): Record<string, unknown> {
    return paymentIntentObject(state, this.currency, this.options.webhookSecret, expandCharge);
  }

  remember(key: string, digest: string, outcome: Outcome): void {
    // Stored without its notification: a replay answers again, it does not notify again.
    this.answers.set(key, { digest, outcome: { httpStatus: outcome.httpStatus, body: outcome.body } });
    if (this.answers.size > MAX_IDEMPOTENCY_KEYS) this.answers.delete(this.answers.keys().next().value!);
  }

  recalled(key: string): { digest: string; outcome: Outcome } | undefined {
    return this.answers.get(key);
  }

  reset(): void {
    this.answers.clear();
    this.awaitingAction.clear();
    this.requireAction.clear();
  }
}

function digestOf(request: FastifyRequest, params: Form): string {
  const sorted = (value: unknown): unknown =>
    typeof value === 'object' && value !== null
      ? Object.fromEntries(
          Object.entries(value)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([k, v]) => [k, sorted(v)]),
        )
      : value;
  return JSON.stringify([request.method, request.routeOptions.url, request.params, sorted(params)]);
}

/**
 * A money route through the fault book (`perform`) with Stripe's Idempotency-Key: the same key
 * and parameters get the stored answer (faults still apply: a replayed answer can be lost too);
 * the same key with other parameters is refused with `idempotency_error`. 5xx answers are not
 * stored, so a retry after one runs again, as at Stripe.
 */
export async function keyedPerform(
  deps: ChannelDeps,
  state: StripeDoubleState,
  request: FastifyRequest,
  reply: FastifyReply,
  op: FaultOp,
  merchantOrder: string,
  params: Form,
  act: (hits: FaultHits) => Promise<Outcome>,
): Promise<FastifyReply> {
  const header = request.headers['idempotency-key'];
  const key = typeof header === 'string' && header !== '' ? header : undefined;
  // Only a keyed request is compared with a stored one or stored itself: no digest without a key.
  const digest = key === undefined ? '' : digestOf(request, params);
  const stored = key === undefined ? undefined : state.recalled(key);
  if (stored && stored.digest !== digest) {
    const message = `Keys for idempotent requests can only be used with the same parameters they were first used with.`;
    return reply.code(400).send(stripeError('idempotency_error', message));
  }
  return perform(deps, request, reply, op, merchantOrder, async (hits) => {
    if (stored) return stored.outcome;
    const outcome = await act(hits);
    if (key !== undefined && outcome.httpStatus < 500) state.remember(key, digest, outcome);
    return outcome;
  });
}
