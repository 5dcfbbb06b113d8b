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
