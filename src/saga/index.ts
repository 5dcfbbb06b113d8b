// The saga module's public surface (seed 002): the after-PAID flow of an order as a persisted saga
// (journal, reverse compensation, backoff, deadline), its pass, the journal view and the attention list.
export { fulfilmentClient, type FulfilmentClient } from './fulfilment.client.ts';
export { ORDER_FLOW, type OrderFlowContext } from './order.flow.ts';
export {
  compensationRefundKey,
  compensationRefunds,
  type CompensationRefunds,
  type ProviderPayments,
} from './refund.seam.ts';
export { advance, type Advance, type Flow, type Step, type StepResult } from './saga.runner.ts';
export { findSaga, journalOf, type JournalEntry, type Saga } from './saga.repo.ts';
export { journalView, sagaRoutes } from './saga.routes.ts';
export { runSagaPass, type SagaDeps, type SagaPassReport } from './saga.service.ts';
