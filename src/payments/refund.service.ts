import { inTx } from '../platform/db.ts';
import { findOrder } from '../orders/orders.repo.ts';
import { refundKeyFor } from './channel.client.ts';
import { applyRefunded } from './effects.ts';
import { noteAttention } from './payments.repo.ts';
import type { PaymentDeps } from './payments.deps.ts';

export type RefundOutcome = 'REFUNDED' | 'PENDING' | 'REFUSED' | 'NOT_REFUNDING';

/**
 * Sends the refund of a REFUNDING order with its fixed key. A lost answer leaves the order
 * REFUNDING; the next attempt (recovery) sends the same key, so the provider makes one refund.
 */
export async function sendRefund(deps: PaymentDeps, orderId: string): Promise<RefundOutcome> {
  const order = await findOrder(deps.db, orderId);
  if (order?.status !== 'REFUNDING') return 'NOT_REFUNDING';
  const reply = await deps.channel.refund(orderId, refundKeyFor(orderId), order.amount);
  if (reply.kind === 'UNKNOWN') return 'PENDING';
  if (reply.kind === 'REFUSED') {
    await inTx(deps.db, (tx) => noteAttention(tx, orderId, `refund refused by the provider: ${reply.status} ${reply.detail}`));
    return 'REFUSED';
  }
  await inTx(deps.db, (tx) => applyRefunded(tx, orderId, order.amount, 'refund reply', deps.clock.now()));
  return 'REFUNDED';
}
