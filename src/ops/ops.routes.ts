import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { keyedDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, tenantScope } from '../platform/auth.ts';
import { inTx } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import { emptyBodyAsObject, type ReasonBody } from '../platform/reason.ts';
import { executeKeyed, findOrderIdsByKey, idempotencyKeyOf, requestDigest, sendKeyed } from '../idempotency/index.ts';
import {
  getOrderFor,
  recordOperatorAction,
  searchOrders,
  SEARCH_PAGE_DEFAULT,
  SEARCH_PAGE_MAX,
  tryAcknowledgeNote,
  type OrderIdParams,
  type OrderStatus,
} from '../orders/index.ts';
import { findOrderIdsByTxn, paymentDeps } from '../payments/index.ts';
import {
  beginRefund,
  cancelNow,
  orderStatusNow,
  resolveByHand,
  returnToStock,
  type Resolution,
} from './ops.actions.ts';
import { decodeCursor, encodeCursor } from './ops.cursor.ts';
import { opsViewRoutes } from './ops.views.ts';
import {
  ackAttentionSchema,
  cancelOrderAdminSchema,
  refundOrderSchema,
  resolveOrderSchema,
  returnOrderSchema,
  searchOrdersSchema,
} from './ops.schemas.ts';

interface SearchQuery {
  q?: string;
  state?: OrderStatus;
  status?: OrderStatus;
  sku?: string;
  limit?: string;
  cursor?: string;
}

/** The operator console's API (issue 36): search, refund, cancel, acknowledge. Admin scope, own tenant. */
export function opsRoutes(app: FastifyInstance, deps: AppDeps): void {
  const admin = requirePrincipal(deps.signer, 'admin');
  const payments = paymentDeps(deps);
  opsViewRoutes(app, deps);

  app.get<{ Querystring: SearchQuery }>(
    '/v1/admin/orders',
    { onRequest: admin, schema: searchOrdersSchema },
    async (request) => {
      const tenantId = tenantScope(principalOf(request));
      const { q, sku, limit, cursor } = request.query;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      const size = limit === undefined ? SEARCH_PAGE_DEFAULT : Number(limit);
      if (size > SEARCH_PAGE_MAX)
        throw new AppError('VALIDATION', `querystring.limit must be <= ${SEARCH_PAGE_MAX}`, {
          field: 'querystring.limit',
        });
      // `q` names an order or a buyer directly, or an Idempotency-Key or provider txn that names orders.
      const orderIds =
        q === undefined
          ? []
          : [...(await findOrderIdsByKey(deps.db, tenantId, q)), ...(await findOrderIdsByTxn(deps.db, q))];
      const page = await searchOrders(deps.db, {
        tenantId,
        ...(q !== undefined ? { q, orderIds } : {}),
        ...((request.query.state ?? request.query.status)
          ? { status: request.query.state ?? request.query.status }
          : {}),
        ...(sku !== undefined ? { sku } : {}),
        limit: size,
        ...(after ? { after } : {}),
      });
      return { orders: page.orders, next_cursor: page.next ? encodeCursor(page.next) : null };
    },
  );

  app.post<{ Params: OrderIdParams; Body: ReasonBody }>(
    '/v1/admin/orders/:id/refund',
    { onRequest: admin, preValidation: emptyBodyAsObject, schema: refundOrderSchema },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const orderId = request.params.id;
      const result = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'admin_refund', key },
        // The reason is commentary on the action, not part of it: a retry of the same key with other
        // words replays the first answer (whose reason the audit trail keeps), as the console's second click does.
        digest: requestDigest('admin_refund', { id: orderId }, {}),
        start: (tx) => beginRefund(deps, payments, tx, principal, orderId, request.body.reason),
        abandoned: (tx) => orderStatusNow(tx, principal, orderId),
      });
      return sendKeyed(reply, result);
    },
  );

  app.post<{ Params: OrderIdParams; Body: ReasonBody }>(
    '/v1/admin/orders/:id/cancel',
    { onRequest: admin, preValidation: emptyBodyAsObject, schema: cancelOrderAdminSchema },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const orderId = request.params.id;
      const result = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'admin_cancel', key },
        digest: requestDigest('admin_cancel', { id: orderId }, {}),
        start: (tx) => cancelNow(deps, tx, principal, orderId, request.body.reason),
      });
      return sendKeyed(reply, result);
    },
  );

  // Issue 48: shipped-and-refunded units back on sale, by an audited operator action only.
  app.post<{ Params: OrderIdParams; Body: ReasonBody }>(
    '/v1/admin/orders/:id/return',
    { onRequest: admin, preValidation: emptyBodyAsObject, schema: returnOrderSchema },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const orderId = request.params.id;
      const result = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'admin_return', key },
        digest: requestDigest('admin_return', { id: orderId }, {}),
        start: (tx) => returnToStock(deps, tx, principal, orderId, request.body.reason),
      });
      return sendKeyed(reply, result);
    },
  );

  app.post<{ Params: OrderIdParams; Body: Resolution }>(
    '/v1/admin/orders/:id/resolve',
    { onRequest: admin, schema: resolveOrderSchema },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const orderId = request.params.id;
      const result = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'admin_resolve', key },
        digest: requestDigest('admin_resolve', { id: orderId }, request.body),
        start: (tx) => resolveByHand(deps, tx, principal, orderId, request.body),
      });
      return sendKeyed(reply, result);
    },
  );

  app.post<{ Params: OrderIdParams }>(
    '/v1/admin/attention/:id/ack',
    { onRequest: admin, schema: ackAttentionSchema },
    async (request) => {
      const principal = principalOf(request);
      const order = await getOrderFor(deps.db, principal, request.params.id);
      const now = deps.clock.now();
      return inTx(deps.db, async (tx) => {
        const ack = await tryAcknowledgeNote(tx, order.orderId, principal.userId, now);
        if (!ack)
          throw new AppError('REJECTED', `order ${order.orderId} has no note for a person`, {
            order_id: order.orderId,
            order_status: order.status,
          });
        if (ack.now)
          await recordOperatorAction(tx, order.orderId, {
            action: 'ack',
            operator: principal.userId,
            operatorTenant: principal.tenantId,
            status: ack.status,
            version: ack.version,
            note: ack.attention,
            at: now,
          });
        return {
          order_id: order.orderId,
          status: ack.status,
          attention: ack.attention,
          acknowledged_by: ack.by,
          acknowledged_at: ack.at.toISOString(),
        };
      });
    },
  );
}
