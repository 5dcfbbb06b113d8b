// The orders domain's door: only what other modules use. What an event does to an order is decided
// by decide/ and applied by `applyOrderEvent`, nowhere else; other modules read orders through these.
export { EFFECTS, type Effect, type OrderEvent, type ProviderStatus, type ProviderVia } from './decide/decider.ts';
export { applyOrderEvent, visibleTo, type AppliedEvent } from './apply/one.ts';
export {
  findOrder,
  findOrderForPayment,
  findOrders,
  findOrderNotes,
  getTimeline,
  lockOrder,
  orderIdsForSku,
  statusCountsForSku,
} from './orders.repo.ts';
export { getOrderFor, orderView } from './orders.service.ts';
export { ordersRoutes } from './orders.routes.ts';
export { createOrderSchema } from './orders.schemas.ts';
export { createOrderResponse, keyedCreate } from './create/one.ts';
export { isMarkedSoldOut } from './create/batch.ts';
// The group commit's and the sold-out wave's statements and the order id, for the bench's floors
// of P1 and P2 (bench/floors.ts).
export { tryFastBatch, type FastBuyer } from './create/batch.fast.repo.ts';
export { tryRefuseSoldOut } from './create/waves.repo.ts';
export { newOrderId } from './orders.keys.ts';
export {
  COMPENSATION_STATUSES,
  EVENT_STATUSES,
  ORDER_STATUSES,
  UNFINISHED_STATUSES,
  type OrderStatus,
} from './decide/states.ts';
export { trySetFulfilment } from './orders.fulfilment.ts';
export type { Order } from './orders.types.ts';
export { applyOrderEvents } from './apply/many.ts';
export {
  claimAbandonedCreated,
  claimUnfinished,
  countUnfinished,
  finishAttempts,
  type AttemptOutcome,
  listNeedingAttention,
  RECOVERY_BATCH,
  STUCK_PREFIX,
  type Candidate,
} from './find/recovery.ts';
export { AT_EXAMPLE, ORDER_ID_EXAMPLE, PAID_ORDER_EXAMPLE } from './orders.examples.ts';
export { OrderIdParams, OrderStatusSchema, OrderView, TimelineEntrySchema } from './orders.schemas.ts';
export { listOrderIdsOfUser, listOrdersByStatus, statusCounts, tryClearRecoveryBackoff } from './find/browse.ts';
export {
  claimStockRequests,
  markStockRequestsSent,
  resendUnansweredRequests,
  type StockResult,
} from './queued/results.ts';
export { syncMirrorMoves } from './queued/mirror.ts';
export { receiveStockResults } from './queued/results.many.ts';
// The wire between the shop and the stock service (queued orders): the pump over one transport
// (database, RabbitMQ or JetStream, orders/queued/transports/) and its operator routes.
export { stockPumpFor, stockServiceRoles } from './queued/pump.ts';
// The pump itself, for bench/p7.harness.ts (its floors run it on one pool).
export { createStockPump } from './queued/pipeline.ts';
export { stockRoutes } from './queued/admin.routes.ts';
// Issue 36's operator console: search, notes for a person and their acknowledgement, operator actions.
export {
  searchOrders,
  SEARCH_PAGE_DEFAULT,
  SEARCH_PAGE_MAX,
  type FoundOrder,
  type SearchCursor,
} from './ops/search.ts';
export { listOpenNotes, noteForPerson, tryAcknowledgeNote, type AttentionNote } from './ops/attention.ts';
export {
  listOperatorActions,
  OPERATOR_ACTIONS,
  recordOperatorAction,
  type OperatorAction,
  type OperatorActionEntry,
} from './ops/actions.ts';
