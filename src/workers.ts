import type { AppDeps } from './app.deps.ts';
import { purgeCompletedKeys } from './idempotency/index.ts';
import { releaseExpired } from './inventory/index.ts';
import { paymentDeps } from './payments/index.ts';
import { runRecoveryPass } from './recovery/index.ts';
import { channelClient } from './payments/index.ts';
import { reconcile, summaryLine } from './reconcile/index.ts';

export interface Loop {
  stop(): Promise<void>;
}

/**
 * A thin loop around a runOnce: never overlapping itself, errors logged and retried on the next
 * tick, stopped by awaiting the pass in flight (STYLE: every background job is runOnce + loop).
 */
export function every(name: string, intervalMs: number, runOnce: () => Promise<unknown>, log: (line: string) => void): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  const tick = () => {
    inFlight = runOnce()
      .then(() => undefined)
      .catch((error: unknown) => log(`${name} failed: ${(error as Error).message}`))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  timer = setTimeout(tick, intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}

export type WorkerFactory = (deps: AppDeps, log: (line: string) => void) => Loop[];

/** The background loops of `flashpay start`; later modules add theirs to this list. */
export const WORKERS: WorkerFactory[] = [
  (deps, log) => [
    every('expiry', deps.config.expiryIntervalMs, () => releaseExpired(deps.db, deps.clock), log),
    // The relay runs its own loop (outbox pipeline); recovery here converges orders only.
    every('recovery', deps.config.recoveryIntervalMs, () => runRecoveryPass(paymentDeps(deps), { staleAfterMs: deps.config.staleAfterMs }), log),
    // The system checks itself: a mismatch is logged with its class, for a person to look at.
    every('reconciliation', deps.config.reconcileIntervalMs, async () => {
      const report = await reconcile(deps.db, channelClient(deps.channelUrl, deps.config.payTimeoutMs));
      for (const m of report.mismatches.slice(0, 20)) log(`reconciliation mismatch ${m.order_id} ${m.status ?? '-'} ${m.class}: ${m.detail}`);
      if (report.mismatches.length > 0) log(summaryLine(report));
    }, log),
    every('idempotency-purge', 60_000, () => purgeCompletedKeys(deps.db, new Date(deps.clock.now().getTime() - deps.config.idempotencyRetentionMs)), log),
  ],
];

export function startWorkers(deps: AppDeps, log: (line: string) => void): Loop[] {
  return WORKERS.flatMap((factory) => factory(deps, log));
}
