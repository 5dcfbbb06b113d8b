import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import { createSku, DEFAULT_HOLD_TTL_MS, getSku, releaseExpired, skuView, updateSku } from './inventory.service.ts';

// Prices are minor units; 10^12 keeps price × MAX_QUANTITY far inside Number.MAX_SAFE_INTEGER.
const MAX_PRICE = 1_000_000_000_000;
const MAX_STOCK = 100_000_000;
/**
 * A SKU id is a path segment (`/v1/admin/skus/{sku}`): it starts with a letter or digit, so `.` and
 * `..` (which URL normalisation removes) and anything that needs escaping are refused at creation.
 */
export const SKU_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$';

const skuBody = {
  type: 'object',
  required: ['sku', 'name', 'price', 'stock'],
  additionalProperties: false,
  properties: {
    sku: { type: 'string', minLength: 1, maxLength: 64, pattern: SKU_PATTERN },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    // Free items are refused: the provider refuses a charge of 0, so a price-0 order could never
    // be paid and would end FAILED (docs/security.md). Give-aways are a wallet credit, not a SKU.
    price: { type: 'integer', minimum: 1, maximum: MAX_PRICE },
    stock: { type: 'integer', minimum: 0, maximum: MAX_STOCK },
    per_user_limit: { type: ['integer', 'null'], minimum: 1 },
    hold_ttl_ms: { type: 'integer', minimum: 1, maximum: 7 * 24 * 3600 * 1000 },
  },
} as const;

const patchBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    price: skuBody.properties.price,
    name: skuBody.properties.name,
    add_stock: { type: 'integer', minimum: 1, maximum: MAX_STOCK },
  },
} as const;

interface SkuBody {
  sku: string;
  name: string;
  price: number;
  stock: number;
  per_user_limit?: number | null;
  hold_ttl_ms?: number;
}

export function inventoryRoutes(app: FastifyInstance, deps: AppDeps): void {
  const admin = requirePrincipal(deps.signer, 'admin');

  app.post<{ Body: SkuBody }>('/v1/admin/skus', { onRequest: admin, schema: { body: skuBody, tags: ['admin'] } }, async (request, reply) => {
    const b = request.body;
    const sku = await createSku(
      deps.db,
      { tenantId: principalOf(request).tenantId, sku: b.sku, name: b.name, price: b.price, stock: b.stock, perUserLimit: b.per_user_limit ?? null, holdTtlMs: b.hold_ttl_ms ?? DEFAULT_HOLD_TTL_MS },
      deps.clock,
    );
    return reply.code(201).header('Location', `/v1/admin/skus/${encodeURIComponent(sku.sku)}`).send(skuView(sku));
  });

  app.get<{ Params: { sku: string } }>('/v1/admin/skus/:sku', { onRequest: admin, schema: { tags: ['admin'] } }, async (request) =>
    skuView(await getSku(deps.db, principalOf(request).tenantId, request.params.sku)),
  );

  // A price or name change alters no existing order: each order line keeps its snapshot.
  app.patch<{ Params: { sku: string }; Body: { price?: number; name?: string; add_stock?: number } }>(
    '/v1/admin/skus/:sku',
    { onRequest: admin, schema: { body: patchBody, tags: ['admin'] } },
    async (request) => {
      const b = request.body;
      const change = { ...(b.price !== undefined ? { price: b.price } : {}), ...(b.name !== undefined ? { name: b.name } : {}), ...(b.add_stock !== undefined ? { addStock: b.add_stock } : {}) };
      return skuView(await updateSku(deps.db, principalOf(request).tenantId, request.params.sku, change));
    },
  );

  app.post('/v1/admin/expiry/run', { onRequest: admin, schema: { tags: ['admin'] } }, async (request) => ({
    released: await releaseExpired(deps.db, deps.clock, tenantScope(principalOf(request))),
  }));
}
