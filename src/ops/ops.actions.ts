import type { AppDeps } from '../app.deps.ts';
import type { Principal } from '../platform/auth.ts';
import { inTx, type Tx } from '../platform/db.ts';
import { jsonResponse, problemResponse, type KeyedStep, type StoredResponse } from '../idempotency/index.ts';
import {
  applyOrderEvent,
  getOrderFor,
  lockOrder,
  recordOperatorAction,
  visibleTo,
  type AppliedEvent,
} from '../orders/index.ts';
import { AppError } from '../platform/errors.ts';
import { followUp, type PaymentDeps } from '../payments/index.ts';

// The console's two order actions (issue 36), each one keyed operation: the decision and the
// operator's name committed together, then (a refund) the provider called with no transaction open.

function refused(applied: AppliedEvent, orderId: string, verb: string): KeyedStep {
  const status = applied.order?.status;
  return {
    final: problemResponse('REJECTED', `order is ${status}, it cannot be ${verb}`, {
      order_id: orderId,
      order_status: status,
    }),
  };
}

/**
 * PAID → REFUNDING with the operator recorded (first commit); then the refund with the order's
 * fixed key and its answer applied (followUp, as recovery re-sends it); the key completed with the
 * status reached. A provider that does not answer leaves REFUNDING: recovery sends the same refund.
 */
export async function beginRefund(
  deps: AppDeps,
  payments: PaymentDeps,
  tx: Tx,
  principal: Principal,
  orderId: string,
  reason: string,
): Promise<KeyedStep> {
  const now = deps.clock.now();
  const event = { type: 'OPERATOR_REFUND', operator: principal.userId } as const;
  const applied = await applyOrderEvent(tx, orderId, event, now, { visibleTo: principal });
  if (applied.outcome !== 'REFUNDING' || !applied.order) return refused(applied, orderId, 'refunded');
  const order = applied.order;
  await recordOperatorAction(tx, orderId, {
    action: 'refund',
    operator: principal.userId,
    operatorTenant: principal.tenantId,
    reason,
    status: order.status,
    version: order.version,
    at: now,
  });
  return {
    continueWith: async (complete) => {
      let status = order.status;
      try {
        status = (await followUp(payments, orderId, applied)).order?.status ?? status;
      } catch {
        // The refund's outcome is not known here: REFUNDING stays, recovery re-sends the same refund.
      }
      const response = jsonResponse(200, { order_id: orderId, status, operator: principal.userId });
      await inTx(deps.db, (t) => complete(t, response));
      return response;
    },
  };
}

/** CREATED → CANCELLED, held units released, the operator and their reason recorded: one commit. */
export async function cancelNow(
  deps: AppDeps,
  tx: Tx,
  principal: Principal,
  orderId: string,
  reason: string,
): Promise<KeyedStep> {
  const now = deps.clock.now();
  const applied = await applyOrderEvent(tx, orderId, { type: 'CANCEL_REQUESTED' }, now, { visibleTo: principal });
  if (applied.outcome !== 'CANCELLED' || !applied.order) return refused(applied, orderId, 'cancelled');
  await recordOperatorAction(tx, orderId, {
    action: 'cancel',
    operator: principal.userId,
    operatorTenant: principal.tenantId,
    reason,
    status: applied.order.status,
    version: applied.order.version,
    at: now,
  });
  return { final: jsonResponse(200, { order_id: orderId, status: 'CANCELLED', operator: principal.userId }) };
}

/**
 * Issue 48: the units of an order refunded after it shipped (REFUNDED_SHIPPED) back on sale, the
 * operator and their reason recorded: one commit. Once: an order with no such unit (not refunded,
 * never shipped, or returned already) is 409 REJECTED and nothing moves.
 */
export async function returnToStock(
  deps: AppDeps,
  tx: Tx,
  principal: Principal,
  orderId: string,
  reason: string,
): Promise<KeyedStep> {
  const now = deps.clock.now();
  const event = { type: 'OPERATOR_RETURN', operator: principal.userId } as const;
  const applied = await applyOrderEvent(tx, orderId, event, now, { visibleTo: principal });
  if (applied.outcome !== 'RETURNED' || !applied.order) return refused(applied, orderId, 'returned to stock');
  await recordOperatorAction(tx, orderId, {
    action: 'return',
    operator: principal.userId,
    operatorTenant: principal.tenantId,
    reason,
    status: applied.order.status,
    version: applied.order.version,
    note: `${applied.decision?.stock.length ?? 0} line(s) back on sale`,
    at: now,
  });
  return {
    final: jsonResponse(200, { order_id: orderId, status: applied.order.status, operator: principal.userId }),
  };
}

/** A refund whose owner died mid-way (its key's lease lapsed): the order's status as it is now. */
export async function orderStatusNow(tx: Tx, principal: Principal, orderId: string): Promise<StoredResponse> {
  const order = await getOrderFor(tx, principal, orderId);
  return jsonResponse(200, { order_id: orderId, status: order.status, operator: principal.userId });
}

/** What an operator found out from the provider by hand, and the receipt that shows it. */
export interface Resolution {
  outcome: 'CHARGED' | 'NOT_CHARGED';
  receipt: string;
}

/**
 * Resolves an UNKNOWN order by hand: the operator's finding is applied as the provider's answer to
 * a query would be (CHARGED → PAID, units confirmed or re-reserved; NOT_CHARGED → FAILED, units
 * released), with the receipt and the operator in the transition's reason and the timeline.
 * Reconciliation still judges the order against the provider's statement, not against the receipt.
 */
export async function resolveByHand(
  deps: AppDeps,
  tx: Tx,
  principal: Principal,
  orderId: string,
  resolution: Resolution,
): Promise<KeyedStep> {
  const now = deps.clock.now();
  const order = await lockOrder(tx, orderId);
  if (!visibleTo(order, principal)) throw new AppError('ORDER_NOT_FOUND', `no order ${orderId}`);
  if (order.status !== 'UNKNOWN')
    return {
      final: problemResponse('REJECTED', `order is ${order.status}, only an UNKNOWN order is resolved by hand`, {
        order_id: orderId,
        order_status: order.status,
      }),
    };
  const cause = `resolved by operator ${principal.userId} (receipt ${resolution.receipt})`;
  const event =
    resolution.outcome === 'CHARGED'
      ? ({ type: 'PROVIDER_ANSWERED', via: 'query', status: 'CHARGED', amount: order.amount, cause } as const)
      : ({ type: 'PROVIDER_ANSWERED', via: 'query', status: 'CLOSED', cause } as const);
  const applied = await applyOrderEvent(tx, orderId, event, now);
  const after = applied.order ?? order;
  await recordOperatorAction(tx, orderId, {
    action: 'resolve',
    operator: principal.userId,
    operatorTenant: principal.tenantId,
    status: after.status,
    version: after.version,
    note: `${resolution.outcome}, receipt ${resolution.receipt}`,
    at: now,
  });
  return { final: jsonResponse(200, { order_id: orderId, status: after.status, operator: principal.userId }) };
}
