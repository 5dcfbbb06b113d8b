import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import type { Config } from '../platform/config.ts';
import { AppError } from '../platform/errors.ts';
import { longestPayTimeoutMs } from '../platform/provider.config.ts';
import { paymentDeps } from '../payments/index.ts';
import { recoverAll } from './recovery.full.ts';
import { recoverySchema, type RecoveryBody } from './recovery.schemas.ts';
import { sagaDeps } from './recovery.saga.ts';

// A PAYING order younger than the pay timeout may still be in its provider call: closing it then
// turns a buyer's payment that is about to succeed into FAILED. The margin covers the commit after
// the reply and clock differences between processes sharing the database.
const STALE_MARGIN_MS = 1_000;

/** The least `stale_after_ms` an operator may ask for. */
export const staleFloorMs = (config: Pick<Config, 'payTimeoutMs' | 'providers'>) =>
  longestPayTimeoutMs(config) + STALE_MARGIN_MS;

/**
 * `POST /v1/admin/recovery/run`: one recovery pass over the token's tenant (every tenant for an
 * operator). Only an operator's pass drains the outbox and advances sagas: both act on every tenant.
 */
export function recoveryRoutes(app: FastifyInstance, deps: AppDeps): void {
  const payments = paymentDeps(deps);
  const saga = sagaDeps(deps);
  app.post<{ Body: RecoveryBody }>(
    '/v1/admin/recovery/run',
    { onRequest: requirePrincipal(deps.signer, 'admin'), schema: recoverySchema },
    async (request) => {
      const floor = staleFloorMs(deps.config);
      const staleAfterMs = request.body?.stale_after_ms ?? Math.max(deps.config.staleAfterMs, floor);
      if (staleAfterMs < floor) {
        throw new AppError(
          'VALIDATION',
          `body.stale_after_ms must be >= ${floor} (the pay timeout ${longestPayTimeoutMs(deps.config)} ms + ${STALE_MARGIN_MS} ms): a younger PAYING order may still be in its provider call`,
          { minimum: floor },
        );
      }
      const tenantId = tenantScope(principalOf(request));
      // Draining and the saga pass act on every tenant's orders: an operator's pass only.
      const everyTenant = tenantId === undefined;
      return recoverAll(payments, {
        staleAfterMs,
        tenantId,
        relay: everyTenant ? deps.relay : undefined,
        reconcile: true,
        ...(everyTenant ? { saga } : {}),
      });
    },
  );
}
