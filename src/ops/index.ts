// The operator console's API (issue 36): order search, refund, cancel and acknowledging a note.
// It drives orders, payments and idempotency through their doors; it owns no table.
export { opsRoutes } from './ops.routes.ts';
