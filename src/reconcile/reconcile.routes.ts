import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import { providerFor } from '../payments/index.ts';
import { reconcile } from './reconcile.service.ts';
import { reconcilePass } from './reconcile.incremental.ts';
import { reconciliationSchema } from './reconcile.schemas.ts';
import { registerSaleGauges } from './reconcile.gauges.ts';

export function reconcileRoutes(app: FastifyInstance, deps: AppDeps): void {
  const channel = providerFor(deps);
  // The alert rules' view of the sale, read when /metrics is scraped (reconcile.gauges.ts).
  registerSaleGauges(deps.db, () => deps.clock.now());
  // A tenant's admin reconciles its own tenant; an operator, every tenant (as `flashpay reconcile`).
  app.get(
    '/v1/admin/reconciliation',
    { onRequest: requirePrincipal(deps.signer, 'admin'), schema: reconciliationSchema },
    async (request) => {
      const tenantId = tenantScope(principalOf(request));
      // The incremental state covers every tenant: a tenant's admin always gets its own full pass.
      if ((request.query as { pass?: string }).pass === 'incremental' && tenantId === undefined)
        return reconcilePass(deps.db, channel);
      return reconcile(deps.db, channel, tenantId);
    },
  );
}
