// The payments domain's public surface: the provider client, the pay and notification routes,
// and convergence of unknown outcomes (recovery calls it).
export { providerFor, providerClient, statusSyncOf, type ProviderDeps } from './providers/index.ts';
export { webhookUrl } from './providers/webhook-paths.ts';
export { channelClient, statementOf, type ChannelClient, type StatementLine } from './channel.client.ts';
export { convergeRefunding, convergeUnknown, type Convergence } from './converge.ts';
export type { PaymentDeps } from './payments.deps.ts';
export { paymentDeps, paymentsRoutes, readAdminOrder } from './payments.routes.ts';
export { adminOrderSchema, AdminOrderView } from './payments.admin.schemas.ts';
export { notificationWebhook } from './payments.schemas.ts';
export { answerEvent, closeAnswer, queryAnswer, type Answer } from './answers.ts';
export { followUp, recordAnswer } from './settle.ts';
export { findOrderIdsByTxn } from './payments.repo.ts';
export { refundKeyFor } from './channel.client.ts';
