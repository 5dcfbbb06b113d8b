// The outbox domain's public surface, for wiring (`flashpay start`, admin routes, reconciliation).
export { EVENT_TYPES, isEventType, type EventType, type OutboxEvent, type Sink } from './outbox.events.ts';
export { createRelay, defaultOwner, type PassResult, type Relay, type RelayOptions } from './relay.ts';
export { RELAY_DEFAULTS } from './relay.defaults.ts';
export { outboxAdmin } from './outbox.admin.ts';
export { createSinkFromConfig, type SinkWiring } from './sinks/index.ts';
export type { DeadEvent } from './outbox.repo.ts';
export { createHttpSink } from './sinks/http.sink.ts';
export { createNatsSink, ensureStream } from './sinks/nats.sink.ts';
export { assertTopology } from './sinks/amqp.sink.ts';
export { DEFAULT_TOPOLOGY, type BrokerTopology } from './sinks/topology.ts';
export { deadSchema, drainSchema, redriveSchema, type RedriveBody } from './outbox.schemas.ts';
export { outboxLag, type OutboxLag } from './outbox.lag.ts';
export { listenForWakeups, OUTBOX_CHANNEL, type WakeupListener } from './outbox.wakeup.ts';
export { literal, oneTripTx, type OneTripOptions } from './outbox.onetrip.ts';
export {
  databaseNow,
  findEvent,
  FOLLOW_BATCH,
  readDeliveredAfter,
  type DeliveredEvent,
  type FollowCursor,
} from './outbox.follow.ts';
export { linkOrderTraces } from './outbox.traces.ts';
