import { findOrder, type OrderStatus } from '../orders/index.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { queryAnswer } from './answers.ts';
import { followUp, settle } from './settle.ts';

export interface Convergence {
  orderId: string;
  /** The order's status after this attempt. */
  status: OrderStatus | undefined;
  /** Why it is still unfinished, when it is. */
  pending?: string;
}

async function result(deps: PaymentDeps, orderId: string, pending: string | undefined): Promise<Convergence> {
  const after = await findOrder(deps.db, orderId);
  return { orderId, status: after?.status, ...(pending !== undefined ? { pending } : {}) };
}

/**
 * Drives an UNKNOWN or PAYING order to a known state by asking the provider. The decider turns
 * a NOT_FOUND into a close (the request may still be on its way), and the close's answer decides.
 */
export async function convergeUnknown(deps: PaymentDeps, orderId: string): Promise<Convergence> {
  const order = await findOrder(deps.db, orderId);
  if (!order || (order.status !== 'UNKNOWN' && order.status !== 'PAYING')) return { orderId, status: order?.status };
  const applied = await settle(deps, orderId, queryAnswer(await deps.channel.query(orderId)));
  return result(deps, orderId, applied.pending);
}

/** Re-sends the refund of a REFUNDING order (same key). */
export async function convergeRefunding(deps: PaymentDeps, orderId: string): Promise<Convergence> {
  const order = await findOrder(deps.db, orderId);
  if (order?.status !== 'REFUNDING') return { orderId, status: order?.status };
  const applied = await followUp(deps, orderId, { outcome: 'PENDING', calls: ['REFUND'] });
  return result(deps, orderId, applied.pending);
}
