import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import { findOrderNotes, getOrderFor, listOrdersByStatus, ORDER_STATUSES, statusCounts, tryClearRecoveryBackoff } from '../orders/index.ts';
import { outboxLag } from '../outbox/index.ts';
import { paymentDeps } from '../payments/index.ts';
import { recoverAll, staleFloorMs } from '../recovery/index.ts';

const countsSchema = { type: 'object', additionalProperties: { type: 'integer' } } as const;
const summaryAnswer = {
  type: 'object',
  required: ['at', 'total', 'counts', 'outbox'],
  properties: {
    at: { type: 'string' },
    total: { type: 'integer' },
    counts: countsSchema,
    outbox: { type: 'object', required: ['pending', 'oldest_pending_ms', 'dead'], properties: { pending: { type: 'integer' }, oldest_pending_ms: { type: 'integer' }, dead: { type: 'integer' } } },
  },
} as const;
const listAnswer = {
  type: 'object',
  required: ['orders'],
  properties: {
    orders: {
      type: 'array',
      items: {
        type: 'object',
        required: ['order_id', 'user_id', 'status', 'amount', 'attention', 'updated_at'],
        properties: { order_id: { type: 'string' }, user_id: { type: 'string' }, status: { type: 'string' }, amount: { type: 'integer' }, attention: { type: ['string', 'null'] }, updated_at: { type: 'string' } },
      },
    },
  },
} as const;
const retryAnswer = {
  type: 'object',
  required: ['order_id', 'status', 'attention'],
  properties: { order_id: { type: 'string' }, status: { type: 'string' }, attention: { type: ['string', 'null'] } },
} as const;
const listQuery = { type: 'object', additionalProperties: false, properties: { status: { type: 'string', enum: [...ORDER_STATUSES] } } } as const;
const orderParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 64 } } } as const;

/**
 * The operations console's reads and its one action. Counts and lag come from the database, so
 * every process sharing it shows the same numbers; the console polls the summary once a second
 * and draws orders/s and pay outcomes from the differences.
 */
export function consoleRoutes(app: FastifyInstance, deps: AppDeps): void {
  const admin = requirePrincipal(deps.signer, 'admin');
  app.get('/v1/admin/console/summary', { onRequest: admin, schema: { tags: ['admin'], response: { 200: summaryAnswer } } }, async (request) => {
    const tenantId = tenantScope(principalOf(request));
    const now = deps.clock.now();
    const [counts, outbox] = await Promise.all([statusCounts(deps.db, tenantId), outboxLag(deps.db, now, tenantId)]);
    return { at: now.toISOString(), total: Object.values(counts).reduce((a, b) => a + b, 0), counts, outbox };
  });

  app.get<{ Querystring: { status?: string } }>('/v1/admin/orders', { onRequest: admin, schema: { querystring: listQuery, tags: ['admin'], response: { 200: listAnswer } } }, async (request) => ({
    orders: await listOrdersByStatus(deps.db, tenantScope(principalOf(request)), request.query.status),
  }));

  // "Retry now" on an order that needs a person: forget its backoff and run one recovery pass of
  // the tenant at the shortest safe staleness (a pay still in flight is never treated as stale).
  const payments = paymentDeps(deps);
  app.post<{ Params: { id: string } }>('/v1/admin/orders/:id/retry', { onRequest: admin, schema: { params: orderParams, tags: ['admin'], response: { 200: retryAnswer } } }, async (request) => {
    const principal = principalOf(request);
    const order = await getOrderFor(deps.db, principal, request.params.id);
    await tryClearRecoveryBackoff(deps.db, order.orderId);
    await recoverAll(payments, { staleAfterMs: staleFloorMs(deps.config), tenantId: order.tenantId, reconcile: false });
    const after = await getOrderFor(deps.db, principal, order.orderId);
    const notes = await findOrderNotes(deps.db, order.orderId);
    return { order_id: after.orderId, status: after.status, attention: notes.attention };
  });
}
