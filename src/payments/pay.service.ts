import type { Principal } from '../platform/auth.ts';
import { inTx, type Tx } from '../platform/db.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import { AppError } from '../platform/errors.ts';
import type { StoredResponse } from '../idempotency/idempotency.repo.ts';
import { jsonResponse, problemResponse } from '../idempotency/idempotency.http.ts';
import type { KeyedStep } from '../idempotency/idempotency.service.ts';
import { lockOrder, transition } from '../orders/orders.repo.ts';
import { cancelLocked, holdIsGone, visibleTo } from '../orders/orders.service.ts';
import type { ChargeReply } from './channel.client.ts';
import { applyCharged, applyNotCharged, type Applied } from './effects.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { sendRefund } from './refund.service.ts';
import { bestEffort, settleAfterCall } from './after-call.ts';

type Complete = (tx: Tx, response: StoredResponse) => Promise<void>;

async function statusResponse(tx: Tx, orderId: string): Promise<StoredResponse> {
  const order = await lockOrder(tx, orderId);
  // A pay whose first request died mid-call finds the order still PAYING: to the client its
  // outcome is unknown, and recovery converges it like any UNKNOWN.
  return jsonResponse(200, { order_id: orderId, status: order?.status === 'PAYING' ? 'UNKNOWN' : order?.status });
}

/** Step 3: what the charge call told us, applied in one transaction with the key's completion. */
async function applyReply(deps: PaymentDeps, orderId: string, amount: number, reply: ChargeReply, complete: Complete): Promise<{ response: StoredResponse; applied?: Applied }> {
  return inTx(deps.db, async (tx) => {
    const now = deps.clock.now();
    let applied: Applied | undefined;
    if (reply.kind === 'CHARGED') applied = await applyCharged(tx, orderId, amount, 'charge reply', now);
    else if (reply.kind === 'DECLINED') applied = await applyNotCharged(tx, orderId, 'charge declined', now);
    else if (reply.kind === 'CLOSED') applied = await applyNotCharged(tx, orderId, 'charge refused: closed', now);
    // A lost answer: the money may have moved. UNKNOWN keeps the unit HELD; recovery converges it.
    // Guarded on PAYING: a notification may already have settled the order meanwhile.
    else if (reply.kind === 'UNKNOWN') await transition(tx, orderId, 'PAYING', 'UNKNOWN', `charge ${reply.reason}`, now);
    const response = await statusResponse(tx, orderId);
    await complete(tx, response);
    return { response, ...(applied ? { applied } : {}) };
  });
}

/**
 * Pay in three separately committed steps (seed 000): (1) CREATED → PAYING commits before the
 * provider is called, so "we may have charged" is on disk before it can be true; (2) the charge,
 * with a timeout, in no transaction; (3) the result applied. Runs as an idempotent keyed step.
 */
export async function beginPay(deps: PaymentDeps, tx: Tx, principal: Principal, orderId: string): Promise<KeyedStep> {
  const order = await lockOrder(tx, orderId);
  if (!visibleTo(order, principal)) throw new AppError('ORDER_NOT_FOUND', `no order ${orderId}`);
  const now = deps.clock.now();
  // Never charge for a unit that is no longer held: the order is cancelled instead, unit released.
  if (order.status === 'CREATED' && (await holdIsGone(tx, order, now))) {
    const cancelled = await cancelLocked(tx, order, 'pay after the hold expired', now);
    const status = cancelled.kind === 'CANCELLED' ? 'CANCELLED' : cancelled.status;
    return { final: problemResponse('REJECTED', 'the reservation expired before payment; the order is cancelled', { order_id: orderId, order_status: status }) };
  }
  const moved = order.status === 'CREATED' && (await transition(tx, orderId, 'CREATED', 'PAYING', 'pay', now)).ok;
  if (!moved) {
    return { final: problemResponse('REJECTED', `order is ${order.status}, it cannot be paid`, { order_id: orderId, order_status: order.status }) };
  }
  return {
    continueWith: async (complete) => {
      const reply = await deps.channel.charge(orderId, order.amount, deps.notifyUrl);
      await faultPoint('pay.after-charge'); // C29-10: PAYING committed, the provider charged, nothing recorded
      const settled = await settleAfterCall(orderId, () => applyReply(deps, orderId, order.amount, reply, complete));
      // The refund is sent after the transition to REFUNDING committed, never inside it.
      if ('applied' in settled && settled.applied?.refund) await bestEffort(`refund of ${orderId}`, () => sendRefund(deps, orderId));
      return settled.response;
    },
  };
}

/** The answer for a pay key whose first request died mid-way: the order's status now. */
export async function abandonedPay(tx: Tx, orderId: string): Promise<StoredResponse> {
  return statusResponse(tx, orderId);
}
