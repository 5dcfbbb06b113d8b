// Names for the shapes of the buyer calls and the events, picked out of the generated types.
import type { operations, webhooks } from './generated/api.js';

type Json<Op, Status extends number> = Op extends {
  responses: { [S in Status]: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

export type CreateOrderRequest = NonNullable<operations['createOrder']['requestBody']>['content']['application/json'];
export type PayRequest = NonNullable<NonNullable<operations['payOrder']['requestBody']>['content']['application/json']>;
export type CreatedOrder = Json<operations['createOrder'], 201>;
export type Order = Json<operations['getOrder'], 200>;
export type OrderStatus = Order['status'];
export type PayResult = Json<operations['payOrder'], 200>;
export type TimelineEntry = Json<operations['getOrderTimeline'], 200>[number];
export type CancelResult = Json<operations['cancelOrder'], 200>;
export type NotificationEffect = Json<operations['receivePaymentNotification'], 200>['effect'];

/** What the outbox relay POSTs to a webhook (and `flashpay listen --forward-to`), one event a request. */
export type OrderEvent = NonNullable<webhooks['orderEvent']['post']['requestBody']>['content']['application/json'];
export type OrderEventType = OrderEvent['event_type'];

// The admin calls (an admin token: the tenant's own; an operator token: every tenant).
export type CreateSkuRequest = operations['createSku']['requestBody']['content']['application/json'];
export type CreatedSku = Json<operations['createSku'], 201>;
/** A SKU with its stock counters: `total = available + held + confirmed + refunded_shipped`. */
export type Sku = Json<operations['getSku'], 200>;
/**
 * One SKU of `GET /v1/admin/skus`: its counters and order outcomes. Typed as the single-SKU view
 * plus what the list adds, until the list route is in the generated document.
 */
export type SkuSummary = Sku & { [more: string]: unknown };
/** The admin view of an order: lines, reservation, payment, attention, audit trail. */
export type AdminOrder = Json<operations['adminGetOrder'], 200>;
export type OrderSearch = NonNullable<operations['adminListOrders']['parameters']['query']>;
export type FoundOrder = Json<operations['adminListOrders'], 200>['orders'][number];
export type RefundResult = Json<operations['adminRefundOrder'], 200>;
export type AdminCancelResult = Json<operations['adminCancelOrder'], 200>;
export type RetryResult = Json<operations['adminRetryOrder'], 200>;
/** An order that needs a person (`GET /v1/admin/attention`). */
export type AttentionItem = Json<operations['adminAttention'], 200>['orders'][number];
export type Acknowledgement = Json<operations['adminAckAttention'], 200>;
export type Reconciliation = Json<operations['getReconciliation'], 200>;
export type ReconciliationPass = NonNullable<
  NonNullable<operations['getReconciliation']['parameters']['query']>['pass']
>;
