import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../app.deps.ts';
import { keyedDeps } from '../../app.deps.ts';
import { executeKeyed, idempotencyKeyOf, jsonResponse, requestDigest, sendKeyed } from '../../idempotency/index.ts';
import { principalOf, requirePrincipal, tenantScope } from '../../platform/auth.ts';
import { AppError } from '../../platform/errors.ts';
import { createSku, DEFAULT_HOLD_TTL_MS, getSku, releaseExpired, skuView, updateSku } from './service.ts';

import {
  createSkuSchema,
  getSkuSchema,
  patchSkuSchema,
  runExpirySchema,
  type PatchSkuBody,
  type SkuBody,
} from './schemas.ts';

/**
 * `replica`: this process is a shop whose stock service has its own database (seed 004, split
 * databases). Its SKU rows are a replica of the stock service's definitions, overwritten by the next
 * one published; a write here would sell from counters nobody else sees, so it is refused before
 * anything is read. Reads and the expiry sweep stay (the shop alone expires its mirrored holds).
 */
export function skuRoutes(app: FastifyInstance, deps: AppDeps, options: { replica?: boolean } = {}): void {
  const admin = requirePrincipal(deps.signer, 'admin');
  const writable = options.replica
    ? [
        admin,
        async () => {
          throw new AppError(
            'SKU_OWNED_BY_STOCK_SERVICE',
            "this shop's SKUs are a replica of the stock service's (FLASHPAY_STOCK_SERVICE=separate): write them on the stock service's port",
          );
        },
      ]
    : admin;

  app.post<{ Body: SkuBody }>(
    '/v1/admin/skus',
    { onRequest: writable, schema: createSkuSchema },
    async (request, reply) => {
      const b = request.body;
      const sku = await createSku(
        deps.db,
        {
          tenantId: principalOf(request).tenantId,
          sku: b.sku,
          name: b.name,
          price: b.price,
          stock: b.stock,
          perUserLimit: b.per_user_limit ?? null,
          holdTtlMs: b.hold_ttl_ms ?? DEFAULT_HOLD_TTL_MS,
        },
        deps.clock,
      );
      return reply
        .code(201)
        .header('Location', `/v1/admin/skus/${encodeURIComponent(sku.sku)}`)
        .send(skuView(sku));
    },
  );

  app.get<{ Params: { sku: string } }>(
    '/v1/admin/skus/:sku',
    { onRequest: admin, schema: getSkuSchema },
    async (request) => skuView(await getSku(deps.db, principalOf(request).tenantId, request.params.sku)),
  );

  // A price or name change alters no existing order: each order line keeps its snapshot.
  app.patch<{ Params: { sku: string }; Body: PatchSkuBody }>(
    '/v1/admin/skus/:sku',
    { onRequest: writable, schema: patchSkuSchema },
    async (request, reply) => {
      const b = request.body;
      const change = {
        ...(b.price !== undefined ? { price: b.price } : {}),
        ...(b.name !== undefined ? { name: b.name } : {}),
        ...(b.add_stock !== undefined ? { addStock: b.add_stock } : {}),
      };
      const { tenantId, userId } = principalOf(request);
      const sku = request.params.sku;
      if (request.headers['idempotency-key'] === undefined)
        return skuView(await updateSku(deps.db, tenantId, sku, change));
      // With a key (the console sends one, issue 36): `add_stock` sent twice adds once.
      const key = idempotencyKeyOf(request, reply);
      const result = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId, userId, operation: 'update_sku', key },
        digest: requestDigest('update_sku', { sku }, b),
        start: async (tx) => ({ final: jsonResponse(200, skuView(await updateSku(tx, tenantId, sku, change))) }),
      });
      return sendKeyed(reply, result);
    },
  );

  app.post('/v1/admin/expiry/run', { onRequest: admin, schema: runExpirySchema }, async (request) => ({
    released: await releaseExpired(deps.db, deps.clock, tenantScope(principalOf(request))),
  }));
}
