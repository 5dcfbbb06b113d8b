import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import { AppError } from '../platform/errors.ts';
import { statusCountsForSku, type OrderIdParams } from '../orders/index.ts';
import { readAdminOrder } from '../payments/index.ts';
import { recoveryStateOf } from '../recovery/index.ts';
import { listSkus, skuView } from '../stock/index.ts';
import { decodeSkuCursor, encodeSkuCursor } from './ops.cursor.ts';
import {
  adminOrderViewSchema,
  listSkusSchema,
  SKU_PAGE_DEFAULT,
  SKU_PAGE_MAX,
  type SkuListQuery,
} from './ops.views.schemas.ts';

/** Issue 52: the SKU list and the admin order view with its recovery. Admin scope, own tenant. */
export function opsViewRoutes(app: FastifyInstance, deps: AppDeps): void {
  const admin = requirePrincipal(deps.signer, 'admin');

  app.get<{ Querystring: SkuListQuery }>(
    '/v1/admin/skus',
    { onRequest: admin, schema: listSkusSchema },
    async (request) => {
      const tenantId = tenantScope(principalOf(request));
      const { limit, cursor } = request.query;
      // Decoded before anything is read: a cursor this server did not give is 400, never a query.
      const after = cursor === undefined ? undefined : decodeSkuCursor(cursor);
      const size = limit === undefined ? SKU_PAGE_DEFAULT : Number(limit);
      if (size > SKU_PAGE_MAX)
        throw new AppError('VALIDATION', `querystring.limit must be <= ${SKU_PAGE_MAX}`, {
          field: 'querystring.limit',
        });
      const page = await listSkus(deps.db, tenantId, after, size);
      // One count per SKU of the page (the single-SKU outcomes' query): at most SKU_PAGE_MAX.
      const skus = [];
      for (const sku of page.skus)
        skus.push({
          tenant_id: sku.tenantId,
          ...skuView(sku),
          orders: await statusCountsForSku(deps.db, sku.tenantId, sku.sku),
        });
      return { skus, next_cursor: page.next ? encodeSkuCursor(page.next) : null };
    },
  );

  app.get<{ Params: OrderIdParams }>(
    '/v1/admin/orders/:id',
    { onRequest: admin, schema: adminOrderViewSchema },
    async (request) => {
      const timing = {
        intervalMs: deps.config.recoveryIntervalMs,
        staleAfterMs: deps.config.staleAfterMs,
        now: deps.clock.now(),
      };
      const { view, extra } = await readAdminOrder(deps.db, principalOf(request), request.params.id, (tx, order, n) =>
        recoveryStateOf(tx, order, n, timing),
      );
      return { ...view, recovery: extra };
    },
  );
}
