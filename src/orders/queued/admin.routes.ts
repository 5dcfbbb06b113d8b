import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../app.deps.ts';
import { requirePrincipal } from '../../platform/auth.ts';
import { listParkedStock } from '../../stock/index.ts';
import { listParkedStockRequests } from './results.ts';
import { stockPumpFor } from './pump.ts';
import { stockDrainSchema, stockParkedSchema } from './admin.schemas.ts';

/**
 * Operator routes of the queued-order path: run the stock pump now (tests and `--no-workers`),
 * and see what was parked (unknown event types on either side), which is never acked away.
 */
export function stockRoutes(app: FastifyInstance, deps: AppDeps): void {
  const operator = requirePrincipal(deps.signer, 'operator');
  app.post('/v1/admin/stock/drain', { onRequest: operator, schema: stockDrainSchema }, async () =>
    stockPumpFor(deps).drain(),
  );
  app.get('/v1/admin/stock/parked', { onRequest: operator, schema: stockParkedSchema }, async () => ({
    parked: [...(await listParkedStockRequests(deps.db)), ...(await listParkedStock(deps.db))].map((p) => ({
      ...p,
      at: p.at ? new Date(p.at).toISOString() : null,
    })),
  }));
}
