import type { AppDeps } from './app.deps.ts';
import { purgeCompletedKeys } from './idempotency/index.ts';
import { releaseExpired } from './stock/index.ts';
import { paymentDeps } from './payments/index.ts';
import { runRecoveryPass, sagaDeps } from './recovery/index.ts';
import { runSagaPass } from './saga/index.ts';
import { providerFor } from './payments/index.ts';
import { fullEveryNth, reconcilePass, summaryLine, whenChanged } from './reconcile/index.ts';
import { backoffDelayMs } from './platform/backoff.ts';
import { stockPumpFor } from './orders/index.ts';
import { runAsSingleton, SINGLETON_LOCKS } from './platform/singleton.ts';

export interface Loop {
  stop(): Promise<void>;
}

// A loop that keeps failing (the database is away) waits at most this long between tries.
const LOOP_BACKOFF_MAX_MS = 30_000;

/**
 * A thin loop around a runOnce: never overlapping itself, stopped by awaiting the pass in flight
 * (STYLE: every background job is runOnce + loop). A failing pass backs off exponentially with
 * jitter (the database is away: do not hammer it, do not log every tick) and the loop resumes
 * its normal pace, saying so, on the first pass that succeeds.
 */
export function every(
  name: string,
  intervalMs: number,
  runOnce: () => Promise<unknown>,
  log: (line: string) => void,
  /** When the first pass runs (default: one interval after the start). */
  firstAfterMs = intervalMs,
): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  let failures = 0;
  const tick = () => {
    inFlight = runOnce()
      .then(() => {
        if (failures > 0) log(`${name} resumed after ${failures} failed passes`);
        failures = 0;
      })
      .catch((error: unknown) => {
        failures++;
        if (failures === 1 || failures % 10 === 0)
          log(`${name} failed (${failures} in a row, backing off): ${(error as Error).message}`);
      })
      .finally(() => {
        const delayMs =
          failures === 0 ? intervalMs : backoffDelayMs(failures, intervalMs, Math.max(intervalMs, LOOP_BACKOFF_MAX_MS));
        if (!stopped) timer = setTimeout(tick, delayMs);
      });
  };
  timer = setTimeout(tick, firstAfterMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}

/** The stock pump's loop; stopping it also closes the pump's broker connection, if it has one. */
function stockLoop(deps: AppDeps, log: (line: string) => void): Loop {
  const pump = stockPumpFor(deps, (error) => log(`stock: ${(error as Error).message}`));
  const loop = every('stock', deps.config.stockIntervalMs, () => pump.drain(), log);
  return {
    async stop() {
      await loop.stop();
      await pump.close();
    },
  };
}

/**
 * Recovery's loop as `flashpay start` runs it (the bench's P6 run starts it alone). Its first pass
 * runs at once: a process restarted after a crash converges what the crash left UNKNOWN now, not
 * one interval (5 s by default) later. A PAYING order of a live process is not taken before it is
 * stale (staleAfterMs), whenever the pass runs.
 */
export function recoveryLoop(deps: AppDeps, log: (line: string) => void): Loop {
  return every(
    'recovery',
    deps.config.recoveryIntervalMs,
    () => runRecoveryPass(paymentDeps(deps), { staleAfterMs: deps.config.staleAfterMs }),
    log,
    0,
  );
}

export type WorkerFactory = (deps: AppDeps, log: (line: string) => void) => Loop[];

/** The background loops of `flashpay start`; later modules add theirs to this list. */
export const WORKERS: WorkerFactory[] = [
  (deps, log) => [
    every('expiry', deps.config.expiryIntervalMs, () => releaseExpired(deps.db, deps.clock), log),
    // The relay runs its own loop (outbox pipeline); recovery here converges orders only.
    recoveryLoop(deps, log),
    // Seed 002: fulfil PAID orders, compensate refused ones, retry stalled refunds (with backoff).
    every('saga', deps.config.recoveryIntervalMs, () => runSagaPass(sagaDeps(deps)), log),
    // The system checks itself: a mismatch is logged with its class, for a person to look at.
    // Skipped while nothing was written (whenChanged), so a quiet system is not read every minute;
    // one process at a time reconciles, however many share the database (an advisory lock).
    every(
      'reconciliation',
      deps.config.reconcileIntervalMs,
      // Each pass reads what changed since the last (reconcilePass); every Nth reads everything.
      whenChanged(
        deps.db,
        fullEveryNth(async (full) => {
          await runAsSingleton(deps.db, SINGLETON_LOCKS.reconciliation, async () => {
            const channel = providerFor(deps);
            const report = await reconcilePass(deps.db, channel, { full });
            for (const m of report.mismatches.slice(0, 20))
              log(`reconciliation mismatch ${m.order_id} ${m.status ?? '-'} ${m.class}: ${m.detail}`);
            for (const d of report.state_drift ?? []) log(`reconciliation state drifted (rebuilt): ${d}`);
            if (report.mismatches.length > 0) log(summaryLine(report));
          });
        }),
      ),
      log,
    ),
    // Queued orders: requests to the stock service, its batches, its results back (orders/queued/pipeline.ts).
    stockLoop(deps, log),
    // Every 10 s, each pass looping over batches: it keeps up with a sale writing 10k keys/s.
    every(
      'idempotency-purge',
      10_000,
      () => purgeCompletedKeys(deps.db, new Date(deps.clock.now().getTime() - deps.config.idempotencyRetentionMs)),
      log,
    ),
  ],
];

export function startWorkers(deps: AppDeps, log: (line: string) => void): Loop[] {
  return WORKERS.flatMap((factory) => factory(deps, log));
}
