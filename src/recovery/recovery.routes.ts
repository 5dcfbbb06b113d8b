import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { requirePrincipal } from '../platform/auth.ts';
import { paymentDeps } from '../payments/index.ts';
import { recoverAll } from './recovery.full.ts';
import { recoverySchema, type RecoveryBody } from './recovery.schemas.ts';


export function recoveryRoutes(app: FastifyInstance, deps: AppDeps): void {
  const payments = paymentDeps(deps);
  app.post<{ Body: RecoveryBody }>('/v1/admin/recovery/run', { onRequest: requirePrincipal(deps.signer, 'admin'), schema: recoverySchema }, async (request) =>
    recoverAll(payments, { staleAfterMs: request.body?.stale_after_ms ?? deps.config.staleAfterMs, relay: deps.relay, reconcile: true }),
  );
}
