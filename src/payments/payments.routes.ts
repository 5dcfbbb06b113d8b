import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { keyedDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal, type Principal } from '../platform/auth.ts';
import { businessMetrics } from '../platform/business-metrics.ts';
import { requestDigest } from '../idempotency/index.ts';
import { idempotencyKeyOf, sendKeyed } from '../idempotency/index.ts';
import { executeKeyedWith, type KeyedOperation } from '../idempotency/index.ts';
import {
  findOrderNotes,
  getOrderFor,
  getTimeline,
  listOperatorActions,
  orderIdsForSku,
  orderView,
  statusCountsForSku,
  type Order,
} from '../orders/index.ts';
import { journalView } from '../saga/index.ts';
import { providerFor, statusSyncOf } from './providers/index.ts';
import { providerWebhookRoutes } from './providers/webhooks.ts';
import { checkSignature, handleNotification, parseNotification, SIGNATURE_HEADER } from './notifications.ts';
import { listNotifications, notificationEffects } from './payments.repo.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { abandonedPay, beginPay } from './pay.service.ts';
import { groupPayCommits } from './pay.group.ts';
import { groupClaims, groupPayClaims } from './pay.claims.ts';
import { beginWalletPay, beginWalletPays } from './wallet-pay.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import { inTx, type Db, type Executor } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import { providersInUse } from '../platform/provider.config.ts';

export function paymentDeps(deps: AppDeps): PaymentDeps {
  return {
    db: deps.db,
    clock: deps.clock,
    channel: providerFor(deps),
    statusSync: statusSyncOf(deps.config),
    providers: deps.config.providers,
    payCommits: groupPayCommits(deps),
    // Read at call time: `start` learns its own URL only after listening.
    get notifyUrl() {
      return deps.notifyUrl;
    },
  };
}

import type { OrderIdParams } from '../orders/index.ts';
import { notificationSchema, payOrderSchema, type PayBody } from './payments.schemas.ts';
import { skuOutcomesSchema } from './payments.admin.schemas.ts';

/** The transitions and the operators' actions (issue 36) in one list, in the order they happened. */
function withOperatorActions(
  transitions: Awaited<ReturnType<typeof getTimeline>>,
  actions: Awaited<ReturnType<typeof listOperatorActions>>,
) {
  const entries: Array<{ at: string; version: number; n: number; entry: object }> = transitions.map((t, n) => ({
    at: t.at,
    version: t.version,
    n,
    entry: t,
  }));
  actions.forEach((a, n) =>
    entries.push({
      at: a.at.toISOString(),
      version: a.version,
      n: transitions.length + n,
      entry: {
        from: a.status,
        to: a.status,
        version: a.version,
        reason: a.note ? `${a.action}: ${a.note}` : a.reason ? `${a.action}: ${a.reason}` : a.action,
        at: a.at.toISOString(),
        action: a.action,
        operator: a.operator,
        // Issue 48's audit trail: the operator's tenant and their own words.
        ...(a.operatorTenant ? { operator_tenant: a.operatorTenant } : {}),
        ...(a.reason ? { operator_reason: a.reason } : {}),
      },
    }),
  );
  // By version first (an action follows the transition it acted on), then by time, then as written.
  entries.sort((x, y) => x.version - y.version || x.at.localeCompare(y.at) || x.n - y.n);
  return entries.map((e) => e.entry);
}

export function paymentsRoutes(app: FastifyInstance, deps: AppDeps): void {
  const payments = paymentDeps(deps);
  // A provider pay's first commit (key claim, CREATED → PAYING) shared with concurrent pays'.
  const payClaims = groupPayClaims(keyedDeps(deps), payments);
  // A wallet pay's one commit (key, PAID, debit, answer) shared with concurrent wallet pays' (issue 38 item 3).
  const walletClaims = groupClaims(keyedDeps(deps), (tx, pays) => beginWalletPays(payments, tx, pays));

  app.post<{ Params: OrderIdParams; Body: PayBody }>(
    '/v1/orders/:id/pay',
    { onRequest: requirePrincipal(deps.signer), schema: payOrderSchema },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const orderId = request.params.id;
      const wallet = request.body?.method === 'wallet';
      const paymentMethod = request.body?.payment_method;
      if (wallet && paymentMethod !== undefined)
        throw new AppError('VALIDATION', 'body.payment_method is for the payment provider, not with method wallet');
      const op: KeyedOperation = {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'pay_order', key },
        // The provider's digest stays as before `method` existed, so keys stored then still replay.
        digest: requestDigest(
          'pay_order',
          { id: orderId },
          wallet ? { method: 'wallet' } : paymentMethod !== undefined ? { payment_method: paymentMethod } : {},
        ),
        start: (tx) =>
          wallet
            ? beginWalletPay(payments, tx, principal, orderId)
            : beginPay(payments, tx, principal, orderId, paymentMethod),
        abandoned: (tx) => abandonedPay(tx, orderId),
      };
      const claims = wallet ? walletClaims : payClaims;
      const result = await executeKeyedWith(keyedDeps(deps), op, (o) =>
        claims.claim({ principal, orderId, paymentMethod }, o),
      );
      if (wallet) await faultPoint('wallet-pay.after-commit'); // debit, PAID and key committed; the answer not sent
      if (!result.replayed) {
        const answer = JSON.parse(result.body) as { status?: unknown; code?: string };
        businessMetrics.payments.inc({
          outcome: result.status === 200 ? String(answer.status) : (answer.code ?? String(result.status)),
        });
      }
      return sendKeyed(reply, result);
    },
  );

  // Issue 48: the built-in channel's notifications are off where no tenant pays through it.
  const fakeInUse = providersInUse(deps.config.providers).includes('fake');
  app.post('/v1/payment-notifications', { schema: notificationSchema }, async (request) => {
    if (!fakeInUse) throw new AppError('PROVIDER_NOT_CONFIGURED', 'no tenant pays through the fake channel here');
    checkSignature(
      deps.notifySecret,
      request.headers[SIGNATURE_HEADER],
      request.rawBody ?? '',
      deps.config.notifyToleranceSeconds,
      Math.floor(Date.now() / 1000),
    );
    return handleNotification(payments, parseNotification(request.body, 'fake'));
  });
  providerWebhookRoutes(app, deps, payments);

  app.get<{ Params: { sku: string } }>(
    '/v1/admin/skus/:sku/outcomes',
    { onRequest: requirePrincipal(deps.signer, 'admin'), schema: skuOutcomesSchema },
    async (request) => {
      const { tenantId } = principalOf(request);
      const [statuses, orderIds] = await Promise.all([
        statusCountsForSku(deps.db, tenantId, request.params.sku),
        orderIdsForSku(deps.db, tenantId, request.params.sku),
      ]);
      return { statuses, notification_effects: await notificationEffects(deps.db, orderIds) };
    },
  );
}

/**
 * The admin order view (`GET /v1/admin/orders/{id}`, served by src/ops): the order with its
 * timeline, notifications, note and journal, and whatever `more` reads about it, all in one
 * snapshot: reads on separate pooled connections could show a notification and miss the note for a
 * person that committed with it.
 */
export async function readAdminOrder<T>(
  db: Db,
  principal: Principal,
  orderId: string,
  more: (tx: Executor, order: Order, recoveryAttempts: number) => Promise<T>,
) {
  const { order, view, timeline, notifications, notes, journal, extra } = await inTx(
    db,
    async (tx) => {
      const order = await getOrderFor(tx, principal, orderId);
      const notes = await findOrderNotes(tx, order.orderId);
      return {
        order,
        view: await orderView(tx, order),
        timeline: withOperatorActions(
          await getTimeline(tx, order.orderId),
          await listOperatorActions(tx, order.orderId),
        ),
        notifications: await listNotifications(tx, order.orderId),
        notes,
        journal: await journalView(tx, order.orderId),
        extra: await more(tx, order, notes.recoveryAttempts),
      };
    },
    { isolation: 'REPEATABLE READ' },
  );
  return {
    view: {
      ...view,
      user_id: order.userId,
      payment: {
        provider: order.paymentProvider ?? null,
        provider_payment_id: order.providerPaymentId ?? null,
      },
      attention: notes.attention,
      recovery_attempts: notes.recoveryAttempts,
      timeline,
      notifications,
      journal,
    },
    extra,
  };
}
