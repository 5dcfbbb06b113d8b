import type { Db } from '../platform/db.ts';
import { changeCounter } from './reconcile.repo.ts';

// Even when nothing changed on our side, the provider's ledger is read this often: a charge we
// never asked for shows up only there.
export const RECONCILE_FULL_EVERY_MS = 15 * 60_000;

/**
 * The background reconciliation's gate: a pass runs when anything was written to the tables it
 * reads since the last pass (PostgreSQL's own write counters, one catalog read, no scan), or when
 * the last one is older than RECONCILE_FULL_EVERY_MS. A quiet system costs nothing per minute.
 */
export function whenChanged(
  db: Db,
  pass: () => Promise<void>,
  now: () => number = Date.now,
): () => Promise<'RAN' | 'SKIPPED'> {
  let lastCounter: number | undefined;
  let lastRunAt = -Infinity;
  return async () => {
    const counter = await changeCounter(db);
    if (counter === lastCounter && now() - lastRunAt < RECONCILE_FULL_EVERY_MS) return 'SKIPPED';
    await pass();
    lastCounter = counter;
    lastRunAt = now();
    return 'RAN';
  };
}

// Every Nth pass the scheduler runs is a full one: it reads everything, rebuilds the incremental
// state and says what the running totals had wrong (state_drift), so drift is caught and mended.
export const RECONCILE_FULL_EVERY_PASSES = 10;

/** Calls `pass(full)` with full = true on the first call and every `n`th after it. */
export function fullEveryNth(
  pass: (full: boolean) => Promise<void>,
  n = RECONCILE_FULL_EVERY_PASSES,
): () => Promise<void> {
  let count = 0;
  return async () => {
    const full = count % n === 0;
    await pass(full);
    count++;
  };
}
