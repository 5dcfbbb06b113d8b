import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { keyedDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal } from '../platform/auth.ts';
import { inTx } from '../platform/db.ts';
import { businessMetrics } from '../platform/business-metrics.ts';
import { AppError } from '../platform/errors.ts';
import { maxOrderAmountOf } from '../platform/provider.config.ts';
import { requestDigest } from '../idempotency/index.ts';
import { idempotencyKeyOf, sendKeyed } from '../idempotency/index.ts';
import { executeKeyed } from '../idempotency/index.ts';
import { canonicalLines, keyedCreate, type RequestedLine } from './create/one.ts';
import { createBatched } from './create/batch.ts';
import { keyedQueuedCreate, wantsAsync } from './queued/pending.ts';
import { createQueuedBatched, queuedBatchEnabled } from './queued/pending.batch.ts';
import { cancelOrder, expireHoldNow, getOrderFor, orderView, timelineFor } from './orders.service.ts';

import {
  cancelOrderSchema,
  createOrderSchema,
  expireReservationSchema,
  getOrderSchema,
  timelineSchema,
  type ExpireBody,
  type OrderIdParams,
} from './orders.schemas.ts';

export { MAX_QUANTITY } from './orders.schemas.ts';

interface CreateBody {
  sku?: string;
  quantity?: number;
  lines?: Array<{ sku: string; quantity?: number }>;
}

/** The validated request as lines, and the body its digest is taken over (lines canonical: by SKU). */
function requestedLines(body: CreateBody): { lines: RequestedLine[]; canonical: unknown } {
  const lines = canonicalLines(
    body.lines
      ? body.lines.map((l) => ({ sku: l.sku, quantity: l.quantity ?? 1 }))
      : [{ sku: body.sku ?? '', quantity: body.quantity ?? 1 }],
  );
  if (new Set(lines.map((l) => l.sku)).size !== lines.length)
    throw new AppError('VALIDATION', 'body/lines must name distinct SKUs');
  // One line digests as the one-line form, so `{sku}` and `{lines: [{sku}]}` are the same request.
  const canonical = lines.length === 1 ? lines[0] : { lines };
  return { lines, canonical };
}

export function ordersRoutes(app: FastifyInstance, deps: AppDeps): void {
  const auth = requirePrincipal(deps.signer);

  app.post<{ Body: CreateBody }>(
    '/v1/orders',
    { onRequest: auth, schema: createOrderSchema },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const { lines, canonical } = requestedLines(request.body);
      const queued = wantsAsync(request.headers.prefer, deps.config.orderMode);
      const scope = { tenantId: principal.tenantId, userId: principal.userId, operation: 'create_order', key };
      const digest = requestDigest('create_order', queued ? { respond: 'async' } : {}, canonical);
      const [only] = lines;
      // The tenant's provider's largest charge in its currency: a number from the configuration, no query.
      const maxAmountMinor = maxOrderAmountOf(deps.config.providers, principal.tenantId);
      // One-line sync creates go through the group commit per SKU (orders/create/batch.ts).
      // Queued creates go through the group commit per tenant (orders/queued/pending.batch.ts).
      const result =
        !queued && only && lines.length === 1 && deps.config.createBatch
          ? await createBatched(keyedDeps(deps), { principal, line: only, scope, digest, maxAmountMinor })
          : queued && queuedBatchEnabled()
            ? await createQueuedBatched(keyedDeps(deps), { principal, lines, scope, digest, maxAmountMinor })
            : await executeKeyed(keyedDeps(deps), {
                scope,
                digest,
                ...(queued ? keyedQueuedCreate : keyedCreate)(principal, lines, () => deps.clock.now(), maxAmountMinor),
              });
      if (!result.replayed) businessMetrics.orders.inc({ status: String(result.status) });
      if (result.status === 202) reply.header('Preference-Applied', 'respond-async');
      return sendKeyed(reply, result);
    },
  );

  app.get<{ Params: OrderIdParams }>('/v1/orders/:id', { onRequest: auth, schema: getOrderSchema }, async (request) => {
    const order = await getOrderFor(deps.db, principalOf(request), request.params.id);
    return orderView(deps.db, order);
  });

  app.get<{ Params: OrderIdParams }>(
    '/v1/orders/:id/timeline',
    { onRequest: auth, schema: timelineSchema },
    async (request) => timelineFor(deps.db, principalOf(request), request.params.id),
  );

  app.post<{ Params: OrderIdParams }>(
    '/v1/orders/:id/cancel',
    { onRequest: auth, schema: cancelOrderSchema },
    async (request) => {
      const principal = principalOf(request);
      const outcome = await inTx(deps.db, (tx) => cancelOrder(tx, principal, request.params.id, deps.clock.now()));
      if (outcome.kind === 'REJECTED')
        throw new AppError('REJECTED', `order is ${outcome.status}, it cannot be cancelled`, {
          order_id: request.params.id,
          order_status: outcome.status,
        });
      return { order_id: outcome.order.orderId, status: outcome.order.status };
    },
  );

  // An operator (or the simulation) ends an order's hold now; the next sweep releases it.
  app.post<{ Body: ExpireBody }>(
    '/v1/admin/reservations/expire',
    { onRequest: requirePrincipal(deps.signer, 'admin'), schema: expireReservationSchema },
    async (request) => ({
      expired: await expireHoldNow(deps.db, principalOf(request), request.body.order_id, deps.clock.now()),
    }),
  );
}
