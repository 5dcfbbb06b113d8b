import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { keyedDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal } from '../platform/auth.ts';
import { businessMetrics } from '../platform/business-metrics.ts';
import { requestDigest } from '../idempotency/digest.ts';
import { idempotencyKeyOf, sendKeyed } from '../idempotency/idempotency.http.ts';
import { executeKeyed } from '../idempotency/idempotency.service.ts';
import { getTimeline } from '../orders/orders.repo.ts';
import { getOrderFor, orderView } from '../orders/orders.service.ts';
import { channelClient } from './channel.client.ts';
import { checkSignature, handleNotification, parseNotification, SIGNATURE_HEADER } from './notifications.ts';
import { listNotifications, skuOutcomes } from './payments.repo.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { abandonedPay, beginPay } from './pay.service.ts';

export function paymentDeps(deps: AppDeps): PaymentDeps {
  return {
    db: deps.db,
    clock: deps.clock,
    channel: channelClient(deps.channelUrl, deps.config.payTimeoutMs),
    // Read at call time: `start` learns its own URL only after listening.
    get notifyUrl() {
      return deps.notifyUrl;
    },
  };
}

import type { OrderIdParams } from '../orders/orders.schemas.ts';
import { adminOrderSchema, notificationSchema, payOrderSchema, skuOutcomesSchema } from './payments.schemas.ts';

export function paymentsRoutes(app: FastifyInstance, deps: AppDeps): void {
  const payments = paymentDeps(deps);

  app.post<{ Params: OrderIdParams }>('/v1/orders/:id/pay', { onRequest: requirePrincipal(deps.signer), schema: payOrderSchema }, async (request, reply) => {
    const principal = principalOf(request);
    const key = idempotencyKeyOf(request, reply);
    const orderId = request.params.id;
    const result = await executeKeyed(keyedDeps(deps), {
      scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'pay_order', key },
      digest: requestDigest('pay_order', { id: orderId }, {}),
      start: (tx) => beginPay(payments, tx, principal, orderId),
      abandoned: (tx) => abandonedPay(tx, orderId),
    });
    if (!result.replayed) {
      const answer = JSON.parse(result.body) as { status?: unknown; code?: string };
      businessMetrics.payments.inc({ outcome: result.status === 200 ? String(answer.status) : (answer.code ?? String(result.status)) });
    }
    return sendKeyed(reply, result);
  });

  app.post('/v1/payment-notifications', { schema: notificationSchema }, async (request) => {
    checkSignature(deps.notifySecret, request.headers[SIGNATURE_HEADER], request.rawBody ?? '', deps.config.notifyToleranceSeconds, Math.floor(Date.now() / 1000));
    const effect = await handleNotification(payments, parseNotification(request.body));
    return { effect };
  });

  app.get<{ Params: { sku: string } }>('/v1/admin/skus/:sku/outcomes', { onRequest: requirePrincipal(deps.signer, 'admin'), schema: skuOutcomesSchema }, async (request) =>
    skuOutcomes(deps.db, principalOf(request).tenantId, request.params.sku),
  );

  app.get<{ Params: OrderIdParams }>('/v1/admin/orders/:id', { onRequest: requirePrincipal(deps.signer, 'admin'), schema: adminOrderSchema }, async (request) => {
    const order = await getOrderFor(deps.db, principalOf(request), request.params.id);
    const [view, timeline, notifications, extra] = await Promise.all([
      orderView(deps.db, order),
      getTimeline(deps.db, order.orderId),
      listNotifications(deps.db, order.orderId),
      deps.db.query<{ attention: string | null; recovery_attempts: number }>('SELECT attention, recovery_attempts FROM orders WHERE order_id = $1', [order.orderId]),
    ]);
    return { ...view, user_id: order.userId, attention: extra.rows[0]?.attention ?? null, recovery_attempts: extra.rows[0]?.recovery_attempts ?? 0, timeline, notifications };
  });
}
