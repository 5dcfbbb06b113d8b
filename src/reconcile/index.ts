// The reconciliation's public surface: the report, its one-line summary and the admin route.
export { reconcile, summaryLine, type ReconciliationReport } from './reconcile.service.ts';
export { reconcilePass } from './reconcile.incremental.ts';
export { reconcileRoutes } from './reconcile.routes.ts';
export { checkEventIntegrity, type EventIntegrity } from './reconcile.events.ts';
export { ReconciliationReport as ReconciliationReportSchema, reconciliationExample } from './reconcile.schemas.ts';
export { whenChanged, fullEveryNth, RECONCILE_FULL_EVERY_PASSES } from './reconcile.schedule.ts';
export { listSplitDisagreements, type SplitDisagreement } from './reconcile.queued.ts';
