import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChannelDeps } from '../channel.routes.ts';
import { decideCharge, decideClose, decideRefund, RefundKeyConflict, type Outcome, type OrderView } from '../ledger.ts';
import { newId } from '../ledger.ts';
import type { StripeDoubleState } from './stripe.state.ts';
import { keyedPerform } from './stripe.state.ts';
import {
  DECLINE_ERROR,
  listOf,
  orderOfPaymentIntent,
  parseForm,
  refundObject,
  stateOf,
  stripeError,
  type Form,
  type PaymentIntentState,
} from './stripe.wire.ts';

// The PaymentIntent and Refund routes of the Stripe double, each through the fault book.
// Stripe's test payment methods choose the path, as in Stripe's test mode.
/** https://docs.stripe.com/testing: a card that always asks for 3-D Secure. */
const THREE_D_SECURE_PM = 'pm_card_threeDSecure2Required';
/** https://docs.stripe.com/testing: a card that is always declined. */
const DECLINED_PM = 'pm_card_chargeDeclined';
/** Stripe's maximum charge: eight digits of minor units ("Amount must be no more than $999,999.99"). */
const MAX_AMOUNT_MINOR = 99_999_999;

const ok = (body: Record<string, unknown>): Outcome => ({ httpStatus: 200, body });
const fail = (httpStatus: number, type: string, message: string, extra: Record<string, unknown> = {}): Outcome => ({
  httpStatus,
  body: stripeError(type, message, extra),
});
const missing = (id: string) =>
  fail(404, 'invalid_request_error', `No such payment_intent: '${id}'`, { code: 'resource_missing', param: 'id' });

export const formOf = (request: FastifyRequest): Form => (request.body as Form | undefined) ?? {};
export const queryOf = (request: FastifyRequest): Form => parseForm(request.url.split('?')[1] ?? '');

/** The PaymentIntent of a merchant order as it stands: the ledger's row, else one awaiting the buyer. */
function currentState(state: StripeDoubleState, view: OrderView, mo: string): PaymentIntentState | undefined {
  if (view.current) return stateOf(view.current);
  const waiting = state.awaitingAction.get(mo);
  return waiting ? { merchantOrder: mo, status: 'requires_action', amount: waiting.amount } : undefined;
}

/** decideCharge's answer in Stripe's words; the ledger's notification is kept. */
function chargeOutcome(state: StripeDoubleState, mo: string, decided: Outcome, view: OrderView): Outcome {
  const { body } = decided;
  const notify = decided.notify ? { notify: decided.notify } : {};
  const amount = Number(body.amount ?? view.current?.amount ?? 0);
  if (decided.httpStatus === 200 && body.result === 'CHARGED')
    return { ...ok(state.pi({ merchantOrder: mo, status: 'succeeded', amount })), ...notify };
  if (decided.httpStatus === 200 && body.result === 'DECLINED') {
    const pi = state.pi({ merchantOrder: mo, status: 'requires_payment_method', amount });
    return { ...fail(402, 'card_error', DECLINE_ERROR.message, { ...DECLINE_ERROR, payment_intent: pi }), ...notify };
  }
  if (body.result === 'CLOSED') {
    const pi = state.pi({ merchantOrder: mo, status: 'canceled', amount: 0 });
    const message = 'This PaymentIntent was canceled; it can no longer be confirmed.';
    return fail(400, 'invalid_request_error', message, { code: 'payment_intent_unexpected_state', payment_intent: pi });
  }
  return fail(400, 'invalid_request_error', String(body.detail ?? 'refused'), { code: 'parameter_invalid' });
}

function registerCreate(app: FastifyInstance, deps: ChannelDeps, state: StripeDoubleState): void {
  app.post('/v1/payment_intents', async (request, reply) => {
    const form = formOf(request);
    const metadata = typeof form.metadata === 'object' ? form.metadata : {};
    const mo = metadata.order_id;
    const amount = Number(form.amount);
    if (typeof mo !== 'string' || mo === '')
      return reply.code(400).send(stripeError('invalid_request_error', 'this double needs metadata[order_id]'));
    if (!Number.isSafeInteger(amount) || amount <= 0)
      return reply.code(400).send(stripeError('invalid_request_error', 'amount must be a positive integer'));
    // As Stripe: refused before any PaymentIntent exists, so no money can move under this key.
    if (amount > MAX_AMOUNT_MINOR)
      return reply.code(400).send(
        stripeError('invalid_request_error', 'Amount must be no more than $999,999.99', {
          code: 'amount_too_large',
          param: 'amount',
        }),
      );
    if (form.confirm !== 'true')
      return reply.code(400).send(stripeError('invalid_request_error', 'this double only creates with confirm=true'));
    return keyedPerform(deps, state, request, reply, 'charge', mo, form, (hits) =>
      deps.store.withOrder(mo, async (view) => {
        // Already waiting for its buyer: the same answer again, whatever this create asks. Only the
        // buyer's confirmation moves the money (an Idempotency-Key replays only its own request).
        const awaiting = view.current ? undefined : state.awaitingAction.get(mo);
        if (awaiting)
          return { outcome: ok(state.pi({ merchantOrder: mo, status: 'requires_action', amount: awaiting.amount })) };
        const decline = hits.DECLINE !== undefined || form.payment_method === DECLINED_PM;
        const threeDSecure = form.payment_method === THREE_D_SECURE_PM || state.requireAction.delete(mo);
        if (!view.current && !decline && threeDSecure) {
          // No money moves until the buyer authenticates (POST …/confirm): nothing in the ledger yet.
          state.awaitingAction.set(mo, { amount });
          return { outcome: ok(state.pi({ merchantOrder: mo, status: 'requires_action', amount })) };
        }
        const decided = decideCharge(view, { merchantOrder: mo, amount, notifyUrl: state.notifyUrl(), decline });
        return { ...decided, outcome: chargeOutcome(state, mo, decided.outcome, view) };
      }),
    );
  });

  // The buyer's side of 3-D Secure (Stripe.js confirms with the client secret): the money moves now.
  app.post('/v1/payment_intents/:id/confirm', async (request, reply) => {
    const id = (request.params as { id: string }).id;
    const mo = orderOfPaymentIntent(id);
    if (mo === undefined) return reply.code(404).send(missing(id).body);
    return keyedPerform(deps, state, request, reply, 'charge', mo, formOf(request), (hits) =>
      deps.store.withOrder(mo, async (view) => {
        const waiting = state.awaitingAction.get(mo);
        const current = currentState(state, view, mo);
        if (!current) return { outcome: missing(id) };
        if (!waiting || view.current) {
          const message = `This PaymentIntent's status is ${current.status}; it cannot be confirmed.`;
          const extra = { code: 'payment_intent_unexpected_state', payment_intent: state.pi(current) };
          return { outcome: fail(400, 'invalid_request_error', message, extra) };
        }
        state.awaitingAction.delete(mo);
        const decline = hits.DECLINE !== undefined;
        const decided = decideCharge(view, {
          merchantOrder: mo,
          amount: waiting.amount,
          notifyUrl: state.notifyUrl(),
          decline,
        });
        return { ...decided, outcome: chargeOutcome(state, mo, decided.outcome, view) };
      }),
    );
  });
}

function registerReadAndCancel(app: FastifyInstance, deps: ChannelDeps, state: StripeDoubleState): void {
  app.get('/v1/payment_intents/search', async (request, reply) => {
    const query = queryOf(request);
    const match = /^metadata\['order_id'\]:'([^']*)'$/.exec(String(query.query ?? '').trim());
    if (!match)
      return reply
        .code(400)
        .send(stripeError('invalid_request_error', "this double searches metadata['order_id']:'…' only"));
    const mo = match[1]!;
    const expand = listOf(query.expand).includes('data.latest_charge');
    return keyedPerform(deps, state, request, reply, 'query', mo, query, () =>
      deps.store.withOrder(mo, async (view) => {
        const found = currentState(state, view, mo);
        const data = found ? [state.pi(found, expand)] : [];
        return {
          outcome: ok({
            object: 'search_result',
            data,
            has_more: false,
            next_page: null,
            url: '/v1/payment_intents/search',
          }),
        };
      }),
    );
  });

  app.get('/v1/payment_intents/:id', async (request, reply) => {
    const id = (request.params as { id: string }).id;
    const mo = orderOfPaymentIntent(id);
    if (mo === undefined) return reply.code(404).send(missing(id).body);
    const query = queryOf(request);
    const expand = listOf(query.expand).includes('latest_charge');
    return keyedPerform(deps, state, request, reply, 'query', mo, query, () =>
      deps.store.withOrder(mo, async (view) => {
        const found = currentState(state, view, mo);
        return { outcome: found ? ok(state.pi(found, expand)) : missing(id) };
      }),
    );
  });

  app.post('/v1/payment_intents/:id/cancel', async (request, reply) => {
    const id = (request.params as { id: string }).id;
    const mo = orderOfPaymentIntent(id);
    if (mo === undefined) return reply.code(404).send(missing(id).body);
    return keyedPerform(deps, state, request, reply, 'close', mo, formOf(request), () =>
      deps.store.withOrder(mo, async (view) => {
        const found = currentState(state, view, mo);
        if (!found) return { outcome: missing(id) };
        if (found.status !== 'requires_action') {
          // Stripe refuses to cancel a PaymentIntent that succeeded (or was canceled) and names it.
          const message = `You cannot cancel this PaymentIntent because it has a status of ${found.status}.`;
          const extra = { code: 'payment_intent_unexpected_state', payment_intent: state.pi(found) };
          return { outcome: fail(400, 'invalid_request_error', message, extra) };
        }
        state.awaitingAction.delete(mo);
        const decided = decideClose(view, mo);
        return { ...decided, outcome: ok(state.pi({ ...found, status: 'canceled' })) };
      }),
    );
  });
}

function refundOutcome(state: StripeDoubleState, mo: string, id: string, decided: Outcome): Outcome {
  const { body } = decided;
  const notify = decided.notify ? { notify: decided.notify } : {};
  if (decided.httpStatus === 200)
    return { ...ok(refundObject(mo, String(body.refund_id), Number(body.amount), state.currency)), ...notify };
  if (body.code === 'NOT_CHARGED' && body.charge_status === 'NOT_FOUND') return missing(id);
  const code = body.code === 'ALREADY_REFUNDED' ? 'charge_already_refunded' : 'parameter_invalid';
  return fail(400, 'invalid_request_error', String(body.detail ?? 'refused'), { code });
}

function registerRefund(app: FastifyInstance, deps: ChannelDeps, state: StripeDoubleState): void {
  app.post('/v1/refunds', async (request: FastifyRequest, reply: FastifyReply) => {
    const form = formOf(request);
    const id = String(form.payment_intent ?? '');
    const mo = orderOfPaymentIntent(id);
    if (mo === undefined) return reply.code(404).send(missing(id).body);
    const header = request.headers['idempotency-key'];
    // Stripe's refunds are idempotent by Idempotency-Key: it is the ledger's refund key.
    const refundKey = typeof header === 'string' && header !== '' ? header : newId('re');
    return keyedPerform(deps, state, request, reply, 'refund', mo, form, async () => {
      try {
        return await deps.store.withOrder(mo, async (view) => {
          const amount = form.amount === undefined ? (view.current?.amount ?? 0) : Number(form.amount);
          const decided = await decideRefund(view, { merchantOrder: mo, refundKey, amount });
          if (decided.write?.record.status === 'REFUNDED') decided.write.account = { kind: 'GIVE_BACK' };
          return { ...decided, outcome: refundOutcome(state, mo, id, decided.outcome) };
        });
      } catch (error) {
        if (!(error instanceof RefundKeyConflict)) throw error;
        return fail(400, 'idempotency_error', 'this Idempotency-Key was used for another refund');
      }
    });
  });
}

export function registerStripeMoneyRoutes(app: FastifyInstance, deps: ChannelDeps, state: StripeDoubleState): void {
  registerCreate(app, deps, state);
  registerReadAndCancel(app, deps, state);
  registerRefund(app, deps, state);
}
