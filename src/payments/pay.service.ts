import type { Principal } from '../platform/auth.ts';
import type { Tx } from '../platform/db.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import type { StoredResponse } from '../idempotency/index.ts';
import { jsonResponse, problemResponse } from '../idempotency/index.ts';
import type { KeyedStep } from '../idempotency/index.ts';
import {
  applyOrderEvent,
  applyOrderEvents,
  lockOrder,
  visibleTo,
  type AppliedEvent,
  type Order,
} from '../orders/index.ts';
import { AppError } from '../platform/errors.ts';
import { providerOfTenant } from '../platform/provider.config.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { chargeAnswer } from './answers.ts';
import type { BuyerAction } from './channel.client.ts';
import { followUp, recordAnswer } from './settle.ts';
import { bestEffort, settleAfterCall } from './after-call.ts';

/** A pay's answer from the order's status: still PAYING is, to the client, an unknown outcome. */
function statusOf(orderId: string, order: Order | undefined, action?: BuyerAction): StoredResponse {
  const status = order?.status === 'PAYING' ? 'UNKNOWN' : order?.status;
  // What the buyer must still do goes with an UNKNOWN only: a converged order needs nothing more.
  return jsonResponse(200, {
    order_id: orderId,
    status,
    ...(action && status === 'UNKNOWN' ? { next_action: action } : {}),
  });
}

async function statusResponse(tx: Tx, orderId: string): Promise<StoredResponse> {
  // A pay whose first request died mid-call finds the order still PAYING: to the client its
  // outcome is unknown, and recovery converges it like any UNKNOWN.
  return statusOf(orderId, await lockOrder(tx, orderId));
}

/**
 * The pay's event, naming the provider the charge goes to: CREATED → PAYING records it on the order
 * in the statement the pay runs anyway (issue 48), and every later call and notification of the order
 * is judged against it. A buyer pays their own tenant's orders only (visibleTo), so it is their tenant's.
 */
function payRequested(deps: PaymentDeps, tenantId: string) {
  const provider = deps.providers ? providerOfTenant(deps.providers, tenantId) : undefined;
  return { type: 'PAY_REQUESTED' as const, ...(provider ? { provider } : {}) };
}

/**
 * Pay in three separately committed steps (seed 000): (1) CREATED → PAYING commits before the
 * provider is called, so "we may have charged" is on disk before it can be true; (2) the charge,
 * with a timeout, in no transaction; (3) the answer applied through the decider, in the same
 * commit as the key's completion (a commit shared with concurrent pays: `deps.payCommits`); a
 * refund it asks for is sent after that commit.
 */
export async function beginPay(
  deps: PaymentDeps,
  tx: Tx,
  principal: Principal,
  orderId: string,
  paymentMethod?: string,
): Promise<KeyedStep> {
  const applied = await applyOrderEvent(tx, orderId, payRequested(deps, principal.tenantId), deps.clock.now(), {
    visibleTo: principal,
  });
  return payStep(deps, orderId, applied, paymentMethod);
}

/**
 * beginPay for many pays in the caller's transaction (a group of claims, pay.claims.ts): their
 * CREATED → PAYING applied set-based (applyOrderEvents). An order a buyer may not see throws, as
 * alone, after the group's writes: the caller's transaction rolls back, and each pay claims alone.
 */
export async function beginPays(
  deps: PaymentDeps,
  tx: Tx,
  pays: ReadonlyArray<{ principal: Principal; orderId: string; paymentMethod?: string }>,
): Promise<KeyedStep[]> {
  const items = pays.map((p) => ({ orderId: p.orderId, event: payRequested(deps, p.principal.tenantId) }));
  const applied = await applyOrderEvents(tx, items, deps.clock.now());
  return pays.map((p, i) => {
    if (!visibleTo(applied[i]!.order, p.principal)) throw new AppError('ORDER_NOT_FOUND', `no order ${p.orderId}`);
    return payStep(deps, p.orderId, applied[i]!, p.paymentMethod);
  });
}

function payStep(deps: PaymentDeps, orderId: string, applied: AppliedEvent, paymentMethod?: string): KeyedStep {
  const order = applied.order;
  if (!order || applied.outcome !== 'PAYING') {
    const detail =
      order?.status === 'CANCELLED' && applied.decision?.to === 'CANCELLED'
        ? 'the reservation expired before payment; the order is cancelled'
        : `order is ${order?.status}, it cannot be paid`;
    return { final: problemResponse('REJECTED', detail, { order_id: orderId, order_status: order?.status }) };
  }
  return {
    continueWith: async (complete) => {
      const reply = await deps.channel.charge(
        orderId,
        order.amount,
        deps.notifyUrl,
        `${order.tenantId}/${order.userId}`,
        paymentMethod,
      );
      await faultPoint('pay.after-charge'); // C29-10: PAYING committed, the provider charged, nothing recorded
      let response: StoredResponse | undefined;
      const recorded = await settleAfterCall(orderId, async () => {
        const item = {
          orderId,
          answer: chargeAnswer(reply, order.amount),
          complete: async (tx: Tx, applied: AppliedEvent) => {
            response = statusOf(orderId, applied.order, reply.kind === 'UNKNOWN' ? reply.action : undefined);
            await complete(tx, response);
          },
        };
        const applied = await (deps.payCommits?.record(item) ??
          recordAnswer(deps, item.orderId, item.answer, item.complete));
        if (!response) throw new Error('pay: no response stored');
        return { response, applied };
      });
      // The refund (if the decision asked for one) is sent after that commit, never inside it.
      if ('applied' in recorded)
        await bestEffort(`follow-up of ${orderId}`, () => followUp(deps, orderId, recorded.applied));
      return recorded.response;
    },
  };
}

/** The answer for a pay key whose first request died mid-way: the order's status now. */
export async function abandonedPay(tx: Tx, orderId: string): Promise<StoredResponse> {
  return statusResponse(tx, orderId);
}
