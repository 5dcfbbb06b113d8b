import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal } from '../platform/auth.ts';
import { listCatalogue } from '../stock/index.ts';
import { findOrder, getTimeline, listOrderIdsOfUser, orderView } from '../orders/index.ts';
import { catalogueSchema, myOrdersSchema } from './web.schemas.ts';

// Each order as `GET /v1/orders/{id}` shows it (every field kept), plus its timeline.

/**
 * The storefront's reads. `GET /v1/orders` is the buyer's own newest orders with their timelines:
 * the page rebuilds "my orders" from it after a refresh, because the truth is in the database,
 * not in the browser's memory.
 */
export function shopRoutes(app: FastifyInstance, deps: AppDeps): void {
  const buyer = requirePrincipal(deps.signer);
  app.get('/v1/skus', { onRequest: buyer, schema: catalogueSchema }, async (request) => ({
    skus: await listCatalogue(deps.db, principalOf(request).tenantId),
  }));

  app.get('/v1/orders', { onRequest: buyer, schema: myOrdersSchema }, async (request) => {
    const { tenantId, userId } = principalOf(request);
    const orders = [];
    for (const id of await listOrderIdsOfUser(deps.db, tenantId, userId)) {
      const order = await findOrder(deps.db, id);
      if (!order) continue;
      const timeline = await getTimeline(deps.db, id);
      orders.push({ ...(await orderView(deps.db, order)), timeline });
    }
    return { orders };
  });
}
