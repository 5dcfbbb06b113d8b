import type { Relay } from '../outbox/index.ts';
import { outboxAdmin } from '../outbox/index.ts';
import { reconcile, type ReconciliationReport } from '../reconcile/index.ts';
import type { PaymentDeps } from '../payments/index.ts';
import { runRecoveryPass, type RecoveryOptions, type RecoveryReport } from './recovery.service.ts';
import { runSagaPass, type SagaDeps, type SagaPassReport } from '../saga/index.ts';

export interface FullRecoveryReport extends RecoveryReport {
  outbox?: { delivered: number; failed: number };
  reconciliation?: ReconciliationReport;
  /** Seed 002: fulfilments and compensations advanced by this pass. */
  saga?: SagaPassReport;
}

/**
 * Seed 000's whole recovery: converge unfinished orders (steps 1–4), drain the outbox (5), then
 * reconcile. Each part is safe to repeat; a relay or a reconciliation may be left out.
 */
export async function recoverAll(
  payments: PaymentDeps,
  options: RecoveryOptions & { relay?: Relay; reconcile?: boolean; saga?: SagaDeps },
): Promise<FullRecoveryReport> {
  const report: FullRecoveryReport = await runRecoveryPass(payments, options);
  if (options.saga) report.saga = await runSagaPass(options.saga);
  if (options.relay) {
    const drained = await outboxAdmin.drainOutbox(options.relay);
    report.outbox = { delivered: drained.delivered, failed: drained.failed };
  }
  if (options.reconcile) report.reconciliation = await reconcile(payments.db, payments.channel, options.tenantId);
  return report;
}
