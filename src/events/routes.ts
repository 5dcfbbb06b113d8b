import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import { AppError } from '../platform/errors.ts';
import { fulfillmentAdminView, fulfillmentRoutes, fulfillmentViewSchema } from '../fulfillment/index.ts';
import { deadSchema, drainSchema, outboxAdmin, redriveSchema, type RedriveBody } from '../outbox/index.ts';
import { findOrder } from '../orders/index.ts';
import { visibleTo } from '../orders/index.ts';

/**
 * The event side of the API: the built-in fulfillment consumer's webhook (what the relay's http
 * sink delivers to), and the operator routes for the outbox and the consumer's view.
 */
export function eventsRoutes(app: FastifyInstance, deps: AppDeps): void {
  // Its own secret: whoever holds the provider's notification secret must not be able to ship orders.
  void app.register(fulfillmentRoutes, { db: deps.db, secret: deps.eventsSecret });
  const admin = requirePrincipal(deps.signer, 'admin');

  // Draining delivers every tenant's pending events and counts them: an operator's action.
  app.post(
    '/v1/admin/outbox/drain',
    { onRequest: requirePrincipal(deps.signer, 'operator'), schema: drainSchema },
    async () => {
      if (!deps.relay) throw new AppError('UNAVAILABLE', 'no outbox relay is configured in this process');
      const result = await outboxAdmin.drainOutbox(deps.relay);
      return { delivered: result.delivered, failed: result.failed };
    },
  );

  app.get('/v1/admin/outbox/dead', { onRequest: admin, schema: deadSchema }, async (request) => ({
    events: await outboxAdmin.listDeadEvents(deps.db, 100, 0, tenantScope(principalOf(request))),
  }));

  app.post<{ Body: RedriveBody }>(
    '/v1/admin/outbox/dead/redrive',
    { onRequest: admin, schema: redriveSchema },
    async (request) =>
      outboxAdmin.redriveDead(deps.db, request.body?.event_ids, deps.clock, tenantScope(principalOf(request))),
  );

  app.get<{ Params: { order_id: string } }>(
    '/v1/admin/fulfillment/:order_id',
    { onRequest: admin, schema: fulfillmentViewSchema },
    async (request) => {
      // The consumer's view of another tenant's order is as invisible as the order itself.
      const order = await findOrder(deps.db, request.params.order_id);
      const view =
        order && visibleTo(order, principalOf(request))
          ? await fulfillmentAdminView(deps.db, request.params.order_id)
          : null;
      if (!view) throw new AppError('NOT_FOUND', `nothing arrived at fulfillment for order ${request.params.order_id}`);
      return view;
    },
  );
}
