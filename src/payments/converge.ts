import { inTx } from '../platform/db.ts';
import { findOrder } from '../orders/orders.repo.ts';
import type { OrderStatus } from '../orders/orders.states.ts';
import type { StatusReply } from './channel.client.ts';
import { applyCharged, applyNotCharged, type Applied } from './effects.ts';
import { noteAttention } from './payments.repo.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { sendRefund } from './refund.service.ts';

export interface Convergence {
  orderId: string;
  /** The order's status after this attempt. */
  status: OrderStatus | undefined;
  /** Why it is still unfinished, when it is. */
  pending?: string;
}

async function applyStatus(deps: PaymentDeps, orderId: string, amount: number, reply: StatusReply, cause: string): Promise<Applied | { pending: string }> {
  if (reply.kind === 'UNKNOWN') return { pending: `${cause} ${reply.reason}` };
  const now = deps.clock.now();
  switch (reply.status) {
    case 'CHARGED':
      return inTx(deps.db, (tx) => applyCharged(tx, orderId, reply.amount ?? amount, cause, now));
    case 'DECLINED':
    case 'CLOSED':
      return inTx(deps.db, (tx) => applyNotCharged(tx, orderId, `${cause} ${reply.status}`, now));
    case 'REFUNDED':
      // Refunded at the provider while we never asked: only a person can say what happened.
      await inTx(deps.db, (tx) => noteAttention(tx, orderId, `provider reports REFUNDED for an order we still consider unpaid`));
      return { pending: 'provider says REFUNDED; needs a human' };
    case 'NOT_FOUND':
      return { pending: 'NOT_FOUND' };
  }
}

/**
 * Drives an UNKNOWN or PAYING order to a known state by asking the provider. NOT_FOUND does not
 * mean "not charged" — the request may still be on its way — so we close the charge and let the
 * close's answer decide (CLOSED: it can never be charged now; CHARGED: it landed just in time).
 */
export async function convergeUnknown(deps: PaymentDeps, orderId: string): Promise<Convergence> {
  const order = await findOrder(deps.db, orderId);
  if (!order || (order.status !== 'UNKNOWN' && order.status !== 'PAYING')) return { orderId, status: order?.status };
  let result = await applyStatus(deps, orderId, order.amount, await deps.channel.query(orderId), 'query');
  if ('pending' in result && result.pending === 'NOT_FOUND') {
    result = await applyStatus(deps, orderId, order.amount, await deps.channel.close(orderId), 'close');
  }
  if ('refund' in result && result.refund) await sendRefund(deps, orderId);
  const after = await findOrder(deps.db, orderId);
  return { orderId, status: after?.status, ...('pending' in result ? { pending: result.pending } : {}) };
}

/** Re-sends the refund of a REFUNDING order (same key). */
export async function convergeRefunding(deps: PaymentDeps, orderId: string): Promise<Convergence> {
  const outcome = await sendRefund(deps, orderId);
  const after = await findOrder(deps.db, orderId);
  return { orderId, status: after?.status, ...(outcome === 'PENDING' || outcome === 'REFUSED' ? { pending: `refund ${outcome.toLowerCase()}` } : {}) };
}
