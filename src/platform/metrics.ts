import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { businessRegistry } from './business-metrics.ts';

/** Prometheus metrics for one server: request counts and latency by route and status. */
export function installMetrics(app: FastifyInstance, guard?: (request: FastifyRequest) => Promise<void>): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'flashpay_http_requests_total',
    help: 'HTTP requests',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'flashpay_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // Callback style: an async hook cost a promise and a turn on every request.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    latency.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true }, ...(guard ? { onRequest: guard } : {}) }, async (_request, reply) =>
    reply.type(registry.contentType).send(`${await registry.metrics()}\n${await businessRegistry.metrics()}`),
  );
  return registry;
}
