import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { requirePrincipal } from '../platform/auth.ts';
import { paymentDeps } from '../payments/index.ts';
import { recoverAll } from './recovery.full.ts';
import { sagaDeps } from './recovery.saga.ts';

const body = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { stale_after_ms: { type: 'integer', minimum: 0, maximum: 7 * 24 * 3600 * 1000 } },
} as const;

export function recoveryRoutes(app: FastifyInstance, deps: AppDeps): void {
  const payments = paymentDeps(deps);
  const saga = sagaDeps(deps);
  app.post<{ Body: { stale_after_ms?: number } | null }>('/v1/admin/recovery/run', { onRequest: requirePrincipal(deps.signer, 'admin'), schema: { body, tags: ['admin'] } }, async (request) =>
    recoverAll(payments, { staleAfterMs: request.body?.stale_after_ms ?? deps.config.staleAfterMs, relay: deps.relay, reconcile: true, saga }),
  );
}
