import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, problem } from '../platform/errors.ts';
import { sendProblem } from '../platform/http.ts';
import type { FaultBook, FaultHits, FaultOp, RequestCounter } from './faults.ts';
import {
  decideCharge,
  decideClose,
  decideQuery,
  decideRefund,
  RefundKeyConflict,
  statementBody,
  type LedgerStore,
  type Outcome,
} from './ledger.ts';
import type { Notifier } from './notifier.ts';
import type { FulfilmentStore } from './fulfilments.ts';
import { channelProblem } from './problems.ts';
import { STATEMENT_PAGE_DEFAULT, STATEMENT_PAGE_MAX, type ChargeBody, type RefundBody } from './channel.schemas.ts';
import { channelSchemas } from './channel.openapi.ts';
import type { RequestLog } from './wire.ts';

/** Everything one running channel owns; shared by the ledger and the control routes. */
export interface ChannelDeps {
  store: LedgerStore;
  faults: FaultBook;
  requests: RequestCounter;
  notifier: Notifier;
  /** Holds a request for a fault; cut short when the channel shuts down. */
  pause(ms: number): Promise<void>;
  /** Hosts notifications may go to (lower case): the double must not be a way to POST anywhere. */
  notifyHosts: readonly string[];
  /** Seed 002: customer balances and the fulfilment double. */
  fulfilments?: FulfilmentStore;
  /** A provider double's (dialect.ts): every request received, and the shape of its own errors. */
  received?: RequestLog;
  errorBody?: (message: string) => Record<string, unknown>;
}

export function assertHttpUrl(value: string, field: string, allowedHosts?: readonly string[]): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(value);
  } catch {
    // refused below
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new AppError('VALIDATION', `body.${field} must be an absolute http(s) URL`);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (allowedHosts && !allowedHosts.includes(host)) {
    throw new AppError(
      'VALIDATION',
      `body.${field} host ${host} is not one this provider double notifies (FLASHPAY_CHANNEL_NOTIFY_HOSTS: ${allowedHosts.join(', ')})`,
    );
  }
}

function send(reply: FastifyReply, outcome: Outcome): FastifyReply {
  reply.code(outcome.httpStatus);
  if (outcome.httpStatus >= 400) reply.type('application/problem+json');
  return reply.send(outcome.body);
}

/**
 * The one path every ledger operation takes: count it, take its faults atomically on arrival,
 * then act in the order the faults promise (hold before, break, act, notify, hold after).
 */
export async function perform(
  deps: ChannelDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  op: FaultOp,
  merchantOrder: string,
  act: (hits: FaultHits) => Promise<Outcome>,
): Promise<FastifyReply> {
  deps.requests.record(op, merchantOrder);
  const hits = deps.faults.take(op, merchantOrder);
  if (hits.DELAY_REQUEST) await deps.pause(hits.DELAY_REQUEST.ms);
  if (hits.RESET_CONNECTION) {
    reply.hijack();
    request.raw.socket.destroy();
    return reply;
  }
  if (hits.ERROR_500) {
    const message = `injected fault ERROR_500 on ${op}`;
    if (deps.errorBody) return reply.code(500).send(deps.errorBody(message));
    return sendProblem(reply, problem('INTERNAL', message));
  }
  const outcome = await act(hits);
  // Committed by now; the notification goes out on its own, never delaying this reply.
  if (outcome.notify) deps.notifier.enqueue(outcome.notify);
  if (hits.DELAY_RESPONSE) await deps.pause(hits.DELAY_RESPONSE.ms);
  return send(reply, outcome);
}

export function registerLedgerRoutes(app: FastifyInstance, deps: ChannelDeps): void {
  const { store } = deps;

  app.post('/charge', { schema: channelSchemas.charge }, async (request, reply) => {
    const body = request.body as ChargeBody & { customer?: string };
    assertHttpUrl(body.notify_url, 'notify_url', deps.notifyHosts);
    const mo = body.merchant_order;
    return perform(deps, request, reply, 'charge', mo, (hits) =>
      store.withOrder(mo, async (view) => {
        const balance = !view.current && body.customer !== undefined ? await view.balanceOf(body.customer) : undefined;
        const broke = balance !== undefined && body.amount > balance;
        const decided = decideCharge(view, {
          merchantOrder: mo,
          amount: body.amount,
          notifyUrl: body.notify_url,
          decline: hits.DECLINE !== undefined || broke,
        });
        if (broke) decided.outcome.body.reason = 'INSUFFICIENT_FUNDS';
        // A new charge of a customer with an account takes from it, in the charge's own write.
        if (decided.write?.record.status === 'CHARGED' && balance !== undefined && body.customer !== undefined)
          decided.write.account = { kind: 'DEBIT', customer: body.customer, amount: body.amount };
        return decided;
      }),
    );
  });

  app.get('/charges/:merchant_order', { schema: channelSchemas.query }, async (request, reply) => {
    const mo = (request.params as { merchant_order: string }).merchant_order;
    return perform(deps, request, reply, 'query', mo, () => store.withOrder(mo, async (view) => decideQuery(view, mo)));
  });

  app.post('/close', { schema: channelSchemas.close }, async (request, reply) => {
    const mo = (request.body as { merchant_order: string }).merchant_order;
    return perform(deps, request, reply, 'close', mo, () => store.withOrder(mo, async (view) => decideClose(view, mo)));
  });

  app.post('/refund', { schema: channelSchemas.refund }, async (request, reply) => {
    const body = request.body as RefundBody;
    const mo = body.merchant_order;
    return perform(deps, request, reply, 'refund', mo, async () => {
      try {
        return await store.withOrder(mo, async (view) => {
          const decided = await decideRefund(view, {
            merchantOrder: mo,
            refundKey: body.refund_key,
            amount: body.amount,
          });
          if (decided.write?.record.status === 'REFUNDED') decided.write.account = { kind: 'GIVE_BACK' };
          return decided;
        });
      } catch (error) {
        if (!(error instanceof RefundKeyConflict)) throw error;
        return {
          httpStatus: 422,
          body: channelProblem('REFUND_KEY_REUSED', 'refund_key was already used for another merchant order', {
            merchant_order: mo,
          }),
        };
      }
    });
  });

  app.get('/statement', { schema: channelSchemas.statement }, async (request) => {
    const q = request.query as { merchant_order?: string; after?: string; limit?: string };
    // Without a cursor or a limit: the whole statement, exactly as the contract's first form.
    const page =
      q.after === undefined && q.limit === undefined
        ? undefined
        : {
            after: Number(q.after ?? 0),
            limit: Math.min(Number(q.limit ?? STATEMENT_PAGE_DEFAULT), STATEMENT_PAGE_MAX),
          };
    return statementBody(await store.statement(q.merchant_order, page), page);
  });
}
