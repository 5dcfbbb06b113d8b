// The recovery domain's public surface: one pass, the whole recovery, and its admin route.
export { recoverAll, type FullRecoveryReport } from './recovery.full.ts';
export { recoveryRoutes, staleFloorMs } from './recovery.routes.ts';
export { sagaDeps } from './recovery.saga.ts';
export {
  RECOVERY_PROVIDER_CONCURRENCY,
  runRecoveryPass,
  type RecoveryOptions,
  type RecoveryReport,
} from './recovery.service.ts';
export { recoveryStateOf, RecoveryState, type RecoveryTiming } from './recovery.view.ts';
