// The fulfillment domain's public surface, for wiring (`flashpay start`, admin routes).
export { consume, type ConsumeFn } from './fulfillment.service.ts';
// A batch applied in one transaction (the webhook's /batch); also P4's consumer-alone run (bench/outbox.relays.ts).
export { consumeBatch, type BatchOutcome } from './fulfillment.batch.ts';
export { fulfillmentRoutes, type FulfillmentRoutesOptions } from './fulfillment.routes.ts';
export { fulfillmentAdminView, findFulfillmentView, type FulfillmentView } from './fulfillment.admin.ts';
export { EFFECTS, type Effect } from './fulfillment.repo.ts';
export {
  startAmqpConsumer,
  startBrokerConsumerFromConfig,
  startJetStreamConsumer,
  type RunningConsumer,
} from './consumers/index.ts';
export { fulfillmentViewSchema, orderEventWebhook } from './fulfillment.schemas.ts';
