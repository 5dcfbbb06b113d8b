import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal } from '../platform/auth.ts';
import { findOrder, listOpenNotes } from '../orders/index.ts';
import { journalOf, listSagasNeedingAttention } from './saga.repo.ts';
import { attentionSchema } from './saga.schemas.ts';
import type { Executor } from '../platform/db.ts';

/** The journal as `GET /v1/admin/orders/{id}` shows it: every step attempt, oldest first. */
export async function journalView(db: Executor, orderId: string) {
  return (await journalOf(db, orderId)).map((e) => ({
    step: e.step,
    direction: e.direction,
    status: e.status,
    key: e.key,
    ...(e.receipt ? { receipt: e.receipt } : {}),
    ...(e.error ? { error: e.error } : {}),
    at: e.at.toISOString(),
  }));
}

export function sagaRoutes(app: FastifyInstance, deps: AppDeps): void {
  // Orders that need a person: notes the decider or recovery left, and sagas past their deadline.
  app.get(
    '/v1/admin/attention',
    { onRequest: requirePrincipal(deps.signer, 'admin'), schema: attentionSchema },
    async (request) => {
      const { tenantId } = principalOf(request);
      const items: Array<{ order_id: string; status: string; reason: string; since: string; attempts: number }> = [];
      // Which notes are listed (unacknowledged, the order not moved since) is decided by listOpenNotes.
      for (const n of await listOpenNotes(deps.db, tenantId))
        items.push({
          order_id: n.order_id,
          status: n.status,
          reason: n.attention,
          since: n.since.toISOString(),
          attempts: n.attempts,
        });
      for (const s of await listSagasNeedingAttention(deps.db, deps.clock.now())) {
        const order = await findOrder(deps.db, s.saga_id);
        if (order?.tenantId !== tenantId || items.some((i) => i.order_id === s.saga_id)) continue;
        items.push({
          order_id: s.saga_id,
          status: order.status,
          reason: s.attention ?? `saga ${s.state} past its deadline`,
          since: s.deadline_at.toISOString(),
          attempts: s.attempts,
        });
      }
      return { orders: items };
    },
  );
}
