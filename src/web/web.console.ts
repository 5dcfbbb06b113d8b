import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import {
  findOrderNotes,
  getOrderFor,
  recordOperatorAction,
  statusCounts,
  tryClearRecoveryBackoff,
} from '../orders/index.ts';
import { outboxLag } from '../outbox/index.ts';
import { paymentDeps } from '../payments/index.ts';
import { recoverAll, staleFloorMs } from '../recovery/index.ts';
import { consoleSummarySchema, retryOrderSchema } from './web.schemas.ts';

/**
 * The operations console's summary and its "retry now" (the search and the other actions: src/ops). Counts and lag come from the database, so
 * every process sharing it shows the same numbers; the console polls the summary once a second
 * and draws orders/s and pay outcomes from the differences.
 */
export function consoleRoutes(app: FastifyInstance, deps: AppDeps): void {
  const admin = requirePrincipal(deps.signer, 'admin');
  app.get('/v1/admin/console/summary', { onRequest: admin, schema: consoleSummarySchema }, async (request) => {
    const tenantId = tenantScope(principalOf(request));
    const now = deps.clock.now();
    const [counts, outbox] = await Promise.all([statusCounts(deps.db, tenantId), outboxLag(deps.db, now, tenantId)]);
    return { at: now.toISOString(), total: Object.values(counts).reduce((a, b) => a + b, 0), counts, outbox };
  });

  // "Retry now" on an order that needs a person: forget its backoff and run one recovery pass of
  // the tenant at the shortest safe staleness (a pay still in flight is never treated as stale).
  const payments = paymentDeps(deps);
  app.post<{ Params: { id: string } }>(
    '/v1/admin/orders/:id/retry',
    { onRequest: admin, schema: retryOrderSchema },
    async (request) => {
      const principal = principalOf(request);
      const order = await getOrderFor(deps.db, principal, request.params.id);
      await tryClearRecoveryBackoff(deps.db, order.orderId);
      await recoverAll(payments, {
        staleAfterMs: staleFloorMs(deps.config),
        tenantId: order.tenantId,
        reconcile: false,
      });
      const after = await getOrderFor(deps.db, principal, order.orderId);
      const notes = await findOrderNotes(deps.db, order.orderId);
      await recordOperatorAction(deps.db, order.orderId, {
        action: 'retry',
        operator: principal.userId,
        operatorTenant: principal.tenantId,
        status: after.status,
        version: after.version,
        at: deps.clock.now(),
      });
      return { order_id: after.orderId, status: after.status, attention: notes.attention };
    },
  );
}
