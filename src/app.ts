import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './app.deps.ts';
import { swaggerOptions } from './api.document.ts';
import { eventsRoutes } from './events/index.ts';
import { skuRoutes } from './stock/index.ts';
import { ordersRoutes } from './orders/index.ts';
import { paymentsRoutes } from './payments/index.ts';
import { reconcileRoutes } from './reconcile/index.ts';
import { recoveryRoutes } from './recovery/index.ts';
import { sagaRoutes } from './saga/index.ts';
import { walletRoutes } from './wallet/index.ts';
import { webRoutes } from './web/index.ts';
import { opsRoutes } from './ops/index.ts';
import { buildHttp } from './platform/http.ts';
import { installMetrics } from './platform/metrics.ts';
import { contractCheckEnabled, installContractCheck } from './platform/contract.ts';
import { followServedAddress } from './platform/openapi.ts';
import { metricsGuard } from './platform/metrics.guard.ts';
import { componentsDown } from './platform/health.ts';
import { stockRoutes } from './orders/index.ts';

export type RouteModule = (app: FastifyInstance, deps: AppDeps) => void;

/** Later modules (payments, outbox, fulfillment, recovery) plug in their routes here. */
const ROUTE_MODULES: RouteModule[] = [
  // With split databases the shop's SKUs are the stock service's replica: no writes here.
  (app, deps) => skuRoutes(app, deps, { replica: deps.config.stockService === 'separate' }),
  ordersRoutes,
  paymentsRoutes,
  recoveryRoutes,
  reconcileRoutes,
  eventsRoutes,
  walletRoutes,
  sagaRoutes,
  webRoutes,
  stockRoutes,
  opsRoutes,
];

export async function buildApp(deps: AppDeps, extra: RouteModule[] = []): Promise<FastifyInstance> {
  const app = buildHttp({
    bodyLimitBytes: deps.config.bodyLimitBytes,
    logLevel: deps.config.logLevel,
    rateLimitPerMinute: deps.config.rateLimitPerMinute,
    failedAuthPerMinute: deps.config.failedAuthPerMinute,
    trustedProxies: deps.config.trustedProxies,
  });
  await app.register(swagger, swaggerOptions);
  await app.register(swaggerUi, { routePrefix: '/docs' });
  followServedAddress(app, deps.config.publicUrl);
  if (contractCheckEnabled()) installContractCheck(app, () => app.swagger() as never);
  installMetrics(app, metricsGuard(deps));

  app.get('/healthz', { schema: { hide: true } }, async () => ({ ok: true }));
  // Red while the database cannot be reached or a broker consumer is down (it reconnects by itself).
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const notReady = (detail: string, extra: Record<string, unknown> = {}) =>
      reply
        .code(503)
        .header('Retry-After', '1')
        .type('application/problem+json')
        .send({ ...extra, type: 'about:blank', title: 'Not ready', status: 503, code: 'UNAVAILABLE', detail });
    try {
      await deps.db.query('SELECT 1');
    } catch {
      return notReady('database unreachable');
    }
    const down = componentsDown();
    if (down.length > 0) return notReady(`down: ${down.map((c) => c.component).join(', ')}`, { components: down });
    return { ok: true };
  });

  for (const register of [...ROUTE_MODULES, ...extra]) register(app, deps);
  await app.ready();
  return app;
}
