import { backoffDelayMs } from '../platform/backoff.ts';
import { businessMetrics } from '../platform/business-metrics.ts';
import { inTx } from '../platform/db.ts';
import {
  applyOrderEvent,
  claimAbandonedCreated,
  claimUnfinished,
  countUnfinished,
  finishAttempt,
  listNeedingAttention,
  STUCK_PREFIX,
  type Candidate,
} from '../orders/index.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import { convergeRefunding, convergeUnknown, type Convergence, type PaymentDeps } from '../payments/index.ts';

export interface RecoveryOptions {
  staleAfterMs: number;
  /** Parallel provider calls within one pass. */
  concurrency?: number;
  /** Only this tenant's orders (a tenant's admin); every tenant when absent (an operator, the loop). */
  tenantId?: string;
}

export interface RecoveryReport {
  examined: number;
  resolved: Record<string, number>;
  pending: number;
  still_pending: Array<{ order_id: string; status: string | undefined; reason: string }>;
  needs_attention: Array<{ order_id: string; status: string; attention: string }>;
}

// A claim outlives one provider round trip many times over; a recovery that died frees it soon.
const CLAIM_MS = 30_000;
// The first few misses retry on the next pass; after that, back off so a stuck order is not hammered.
const FREE_RETRIES = 3;
const MAX_BACKOFF_MS = 5 * 60_000;
// After this many misses a person is told; the order keeps being retried, slowly.
const ATTENTION_AFTER = 10;

function nextAttemptAt(now: Date, attempts: number): Date | null {
  if (attempts < FREE_RETRIES) return null;
  return new Date(now.getTime() + backoffDelayMs(attempts - FREE_RETRIES + 1, 1000, MAX_BACKOFF_MS));
}

// A recovery paused past its claim (CLAIM_MS) is overtaken by another; when it wakes, its order
// writes go through the decider under the order lock (the guarded transition is the fence: it acts
// on the status it finds, so a result already applied is a no-op), its provider calls are
// idempotent (query, close, refund with the fixed key), and its bookkeeping is fenced by the claim.
async function examine(deps: PaymentDeps, candidate: Candidate): Promise<Convergence> {
  try {
    await faultPoint('recovery.after-claim', { orderId: candidate.orderId });
    const result =
      candidate.status === 'REFUNDING'
        ? await convergeRefunding(deps, candidate.orderId)
        : await convergeUnknown(deps, candidate.orderId);
    const attempts = candidate.attempts + 1;
    const attention =
      result.pending && attempts >= ATTENTION_AFTER
        ? `${STUCK_PREFIX} after ${attempts} attempts: ${result.pending}`
        : null;
    await finishAttempt(
      deps.db,
      candidate.orderId,
      result.pending !== undefined,
      result.pending ? nextAttemptAt(deps.clock.now(), attempts) : null,
      attention,
      candidate.claim,
    );
    return result;
  } catch (error) {
    await finishAttempt(
      deps.db,
      candidate.orderId,
      true,
      nextAttemptAt(deps.clock.now(), candidate.attempts + 1),
      null,
      candidate.claim,
    ).catch(() => undefined);
    return { orderId: candidate.orderId, status: candidate.status, pending: `error: ${(error as Error).message}` };
  }
}

async function inBatches<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

/** CREATED orders whose unit is gone are cancelled; a still-HELD one is released in the same transaction. */
async function cancelAbandoned(deps: PaymentDeps, tenantId?: string): Promise<number> {
  return inTx(deps.db, async (tx) => {
    const now = deps.clock.now();
    let cancelled = 0;
    for (const orderId of await claimAbandonedCreated(tx, now, tenantId)) {
      if ((await applyOrderEvent(tx, orderId, { type: 'HOLD_EXPIRED' }, now)).outcome === 'CANCELLED') cancelled++;
    }
    return cancelled;
  });
}

/**
 * One recovery pass (seed 000's steps 1–4): query UNKNOWN and stale PAYING orders and apply the
 * answer (NOT_FOUND → close, the close decides); re-send REFUNDING refunds with their fixed key;
 * cancel CREATED orders whose reservation is gone. Safe to run repeatedly, concurrently with
 * callbacks, and in several processes at once.
 */
export async function runRecoveryPass(deps: PaymentDeps, options: RecoveryOptions): Promise<RecoveryReport> {
  const now = deps.clock.now();
  const candidates = await inTx(deps.db, (tx) =>
    claimUnfinished(
      tx,
      now,
      new Date(now.getTime() - options.staleAfterMs),
      new Date(now.getTime() + CLAIM_MS),
      options.tenantId,
    ),
  );
  const results = await inBatches(candidates, options.concurrency ?? 8, (candidate) => examine(deps, candidate));
  const resolved: Record<string, number> = {};
  for (const r of results) if (!r.pending && r.status) resolved[r.status] = (resolved[r.status] ?? 0) + 1;
  const cancelled = await cancelAbandoned(deps, options.tenantId);
  if (cancelled > 0) resolved.CANCELLED = (resolved.CANCELLED ?? 0) + cancelled;
  const pending = await countUnfinished(deps.db, options.tenantId);
  for (const [status, n] of Object.entries(resolved)) businessMetrics.recovered.inc({ status }, n);
  if (options.tenantId === undefined) businessMetrics.unfinished.set(pending);
  return {
    examined: candidates.length + cancelled,
    resolved,
    pending,
    still_pending: results
      .filter((r) => r.pending)
      .map((r) => ({ order_id: r.orderId, status: r.status, reason: r.pending ?? '' })),
    needs_attention: await listNeedingAttention(deps.db, options.tenantId),
  };
}
