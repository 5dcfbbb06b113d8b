import type { ProviderStatus, ProviderVia } from '../orders/index.ts';
import type { ChargeReply, RefundReply, StatusReply } from './channel.client.ts';

// The provider's replies as the decider's events. Pure and a leaf: the deps, the group commit and
// settle all speak of an Answer, and none of them imports another for it.

/** A provider answer as the decider's event. A reply we did not get is LOST, never a failure. */
export function answerEvent(
  via: ProviderVia,
  status: ProviderStatus,
  cause: string,
  amount?: number,
  paymentId?: string | null,
) {
  return {
    type: 'PROVIDER_ANSWERED' as const,
    via,
    status,
    cause,
    ...(amount !== undefined ? { amount } : {}),
    // The provider's id of the payment, recorded by the transition this answer causes (issue 48).
    ...(paymentId ? { paymentId } : {}),
  };
}

export function chargeAnswer(reply: ChargeReply, amount: number) {
  if (reply.kind === 'UNKNOWN') return answerEvent('charge', 'LOST', reply.reason);
  if (reply.kind === 'DECLINED' && reply.reason) return answerEvent('charge', 'DECLINED', `charge: ${reply.reason}`);
  return answerEvent('charge', reply.kind, 'charge', reply.kind === 'CHARGED' ? amount : undefined, reply.txn);
}

export function statusAnswer(via: 'query' | 'close', reply: StatusReply) {
  if (reply.kind === 'UNKNOWN') return answerEvent(via, 'LOST', reply.reason);
  return answerEvent(via, reply.status, via, reply.amount, reply.txn);
}

export function refundAnswer(reply: RefundReply) {
  if (reply.kind === 'UNKNOWN') return answerEvent('refund', 'LOST', reply.reason);
  // A sentence and the provider's code (providerNote), never its raw body.
  if (reply.kind === 'REFUSED') return answerEvent('refund', 'REFUND_REFUSED', reply.detail);
  if (reply.already) return answerEvent('refund', 'REFUNDED', 'refund reply: already refunded at the provider');
  return answerEvent('refund', 'REFUNDED', 'refund reply');
}

export type Answer = ReturnType<typeof answerEvent>;

export const queryAnswer = (reply: StatusReply) => statusAnswer('query', reply);
export const closeAnswer = (reply: StatusReply) => statusAnswer('close', reply);
