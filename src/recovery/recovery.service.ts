import { backoffDelayMs } from '../platform/backoff.ts';
import { businessMetrics } from '../platform/business-metrics.ts';
import { inTx } from '../platform/db.ts';
import {
  applyOrderEvent,
  claimAbandonedCreated,
  claimUnfinished,
  countUnfinished,
  findOrder,
  finishAttempts,
  listNeedingAttention,
  RECOVERY_BATCH,
  STUCK_PREFIX,
  type AttemptOutcome,
  type Candidate,
} from '../orders/index.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import {
  answerEvent,
  closeAnswer,
  convergeRefunding,
  followUp,
  queryAnswer,
  type Convergence,
  type PaymentDeps,
} from '../payments/index.ts';
import { answerApplier } from './recovery.apply.ts';
import { recordAttempts } from './recovery.attempts.ts';
import { callLimit, type CallLimit } from './call-limit.ts';
import { DEFAULT_STATUS_SYNC, type StatusSync } from '../platform/provider.config.ts';

export interface RecoveryOptions {
  staleAfterMs: number;
  /** Provider calls in flight within one pass (default RECOVERY_PROVIDER_CONCURRENCY). */
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

/**
 * Provider calls one recovery pass has in flight at most (queries, closes, refunds together). An
 * outage leaves thousands of UNKNOWN orders: this many at once keeps a provider answering in
 * tens of ms busy without flooding it.
 */
export const RECOVERY_PROVIDER_CONCURRENCY = 32;
// Batches claimed and examined at once by one pass.
const CLAIM_LANES = 2;

// A claim outlives one provider round trip many times over; a recovery that died frees it soon.
const CLAIM_MS = 30_000;
// The first few misses retry on the next pass; after that, back off (the provider's schedule) so
// a stuck order is not hammered.
const FREE_RETRIES = 3;
// After this many misses a person is told; the order keeps being retried, slowly.
const ATTENTION_AFTER = 10;

function nextAttemptAt(now: Date, attempts: number, sync: StatusSync): Date | null {
  if (attempts < FREE_RETRIES) return null;
  return new Date(now.getTime() + backoffDelayMs(attempts - FREE_RETRIES + 1, sync.retryBaseMs, sync.maxBackoffMs));
}

function syncOf(deps: PaymentDeps, candidate: Candidate): StatusSync {
  return deps.statusSync?.(candidate.tenantId, candidate.paymentProvider) ?? DEFAULT_STATUS_SYNC.fake;
}

interface Pass {
  deps: PaymentDeps;
  limit: CallLimit;
  /** Calls in flight at most (the limit's size). */
  concurrency: number;
  answers: ReturnType<typeof answerApplier>;
  serial: ReturnType<typeof serially>;
}

/**
 * An UNKNOWN or stale PAYING order: query, apply the answer; NOT_FOUND asks for a close, whose
 * answer decides. A payment the provider still holds for its buyer (3-D Secure, WAIT_BUYER_PAY)
 * stays unknown until its provider's `closePendingAfterMs`; then it is closed there, and the
 * close's answer decides (a buyer who paid meanwhile makes the close answer CHARGED).
 */
async function convergeCard(pass: Pass, candidate: Candidate): Promise<Convergence> {
  const { deps, limit, answers } = pass;
  const { orderId } = candidate;
  const queried = await limit(() => deps.channel.query(orderId));
  let applied = await answers.apply(orderId, queryAnswer(queried));
  const waitedMs = deps.clock.now().getTime() - candidate.since.getTime();
  const sync = syncOf(deps, candidate);
  const buyerTooSlow =
    queried.kind === 'UNKNOWN' && queried.pendingAtProvider !== undefined && waitedMs >= sync.closePendingAfterMs;
  if ((applied.calls.length === 1 && applied.calls[0] === 'CLOSE') || buyerTooSlow) {
    const closed = await limit(() => deps.channel.close(orderId));
    applied = await answers.apply(orderId, closeAnswer(closed));
    // A real provider closes nothing it never received: past the provider's window NOT_FOUND is final.
    const nothingThere = queried.kind === 'STATUS' && queried.status === 'NOT_FOUND';
    if (nothingThere && closed.kind === 'STATUS' && closed.status === 'NOT_FOUND') {
      const windowMs = sync.notFoundFinalAfterMs;
      if (waitedMs >= windowMs)
        applied = await answers.apply(
          orderId,
          answerEvent('close', 'CLOSED', `NOT_FOUND at the provider for ${waitedMs} ms (final after ${windowMs} ms)`),
        );
    }
  }
  // Anything else (a refund a late success asks for) follows the one-order path.
  if (applied.calls.length > 0) applied = await followUp(deps, orderId, applied);
  const status = applied.order?.status ?? (await findOrder(deps.db, orderId))?.status;
  const pending =
    queried.kind === 'UNKNOWN' && queried.pendingAtProvider !== undefined && applied.pending !== undefined
      ? `waiting for the buyer at the provider (${queried.pendingAtProvider}); closed after ${sync.closePendingAfterMs} ms`
      : applied.pending;
  return { orderId, status, ...(pending !== undefined ? { pending } : {}) };
}

// A recovery paused past its claim (CLAIM_MS) is overtaken by another; when it wakes, its order
// writes go through the decider under the order lock (the guarded transition is the fence: it acts
// on the status it finds, so a result already applied is a no-op), its provider calls are
// idempotent (query, close, refund with the fixed key), and its bookkeeping is fenced by the claim.
async function examine(pass: Pass, candidate: Candidate): Promise<[Convergence, AttemptOutcome]> {
  const { deps } = pass;
  const { orderId, claim } = candidate;
  const attempts = candidate.attempts + 1;
  try {
    await faultPoint('recovery.after-claim', { orderId });
    const result =
      candidate.status === 'REFUNDING'
        ? await pass.limit(() => convergeRefunding(deps, orderId))
        : await convergeCard(pass, candidate);
    const attention =
      result.pending && attempts >= ATTENTION_AFTER
        ? `${STUCK_PREFIX} after ${attempts} attempts: ${result.pending}`
        : null;
    const nextAt = result.pending ? nextAttemptAt(deps.clock.now(), attempts, syncOf(deps, candidate)) : null;
    return [result, { orderId, pending: result.pending !== undefined, nextAt, attention, claim }];
  } catch (error) {
    const nextAt = nextAttemptAt(deps.clock.now(), attempts, syncOf(deps, candidate));
    return [
      { orderId, status: candidate.status, pending: `error: ${(error as Error).message}` },
      { orderId, pending: true, nextAt, attention: null, claim },
    ];
  }
}

/** Examines a claimed batch, then writes its bookkeeping; its results go to `out`. */
async function examineBatch(
  pass: Pass,
  candidates: readonly Candidate[],
  missed: Set<string>,
  out: Convergence[],
): Promise<void> {
  const examined = await Promise.all(candidates.map((c) => examine(pass, c)));
  for (const [result] of examined) if (result.pending !== undefined) missed.add(result.orderId);
  // One statement for the batch's bookkeeping, each order fenced by its own claim. If it fails,
  // the claims lapse (CLAIM_MS) and a later pass examines the orders again, as after a crash.
  // Then what each attempt learnt, for the admin order view (issue 52): after the orders' own
  // bookkeeping, so its failure costs only the explanation.
  await pass
    .serial(async () => {
      await finishAttempts(
        pass.deps.db,
        examined.map(([, outcome]) => outcome),
      );
      await recordAttempts(
        pass.deps.db,
        pass.deps.clock.now(),
        examined.map(([result, outcome]) => ({
          orderId: result.orderId,
          pending: result.pending,
          nextAt: outcome.nextAt,
        })),
      );
    })
    .catch(() => undefined);
  out.push(...examined.map(([result]) => result));
}

/**
 * Claims batches and examines them until no candidate is left that this pass has not tried. An
 * order this pass missed is released by its bookkeeping and excluded from this pass's later claims
 * (the next pass retries it); claims and bookkeeping of one pass run one after another (`serial`),
 * so a claim never sees a miss released before it was added to `missed`.
 *
 * A lane claims its next batch as soon as the provider calls waiting for a slot fall to the
 * limit's size, not when its batch has been applied: measured on P6, lanes that waited for their
 * batch's last answer and bookkeeping drained the provider queue together and left it idle about
 * one tenth of the time. At most two batches of a lane are open at once, so answers waiting for
 * their group commit stay bounded (and well inside their claim).
 */
async function claimAndExamine(pass: Pass, options: RecoveryOptions, missed: Set<string>): Promise<Convergence[]> {
  const out: Convergence[] = [];
  let previous: Promise<void> = Promise.resolve();
  for (;;) {
    const candidates = await pass.serial(() => {
      const now = pass.deps.clock.now();
      return inTx(pass.deps.db, (tx) =>
        claimUnfinished(
          tx,
          now,
          new Date(now.getTime() - options.staleAfterMs),
          new Date(now.getTime() + CLAIM_MS),
          options.tenantId,
          [...missed],
        ),
      );
    });
    const batch = examineBatch(pass, candidates, missed, out);
    if (candidates.length < RECOVERY_BATCH) {
      await Promise.all([previous, batch]);
      return out;
    }
    await previous;
    // Let the batch's examinations reach the limit before asking how many calls wait for it.
    await new Promise((resolve) => setImmediate(resolve));
    await pass.limit.short(pass.concurrency);
    previous = batch;
  }
}

/** Runs calls one after another, in the order they were made. */
function serially(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
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
  const concurrency = options.concurrency ?? RECOVERY_PROVIDER_CONCURRENCY;
  const pass: Pass = {
    deps,
    limit: callLimit(concurrency),
    concurrency,
    answers: answerApplier(deps),
    serial: serially(),
  };
  // Two claimers: one examines its batch while the other claims and starts the next.
  const missed = new Set<string>();
  const lanes = await Promise.all(Array.from({ length: CLAIM_LANES }, () => claimAndExamine(pass, options, missed)));
  const results = lanes.flat();
  const resolved: Record<string, number> = {};
  for (const r of results) if (!r.pending && r.status) resolved[r.status] = (resolved[r.status] ?? 0) + 1;
  const cancelled = await cancelAbandoned(deps, options.tenantId);
  if (cancelled > 0) resolved.CANCELLED = (resolved.CANCELLED ?? 0) + cancelled;
  const pending = await countUnfinished(deps.db, options.tenantId);
  for (const [status, n] of Object.entries(resolved)) businessMetrics.recovered.inc({ status }, n);
  if (options.tenantId === undefined) businessMetrics.unfinished.set(pending);
  return {
    examined: results.length + cancelled,
    resolved,
    pending,
    still_pending: results
      .filter((r) => r.pending)
      .map((r) => ({ order_id: r.orderId, status: r.status, reason: r.pending ?? '' })),
    needs_attention: await listNeedingAttention(deps.db, options.tenantId),
  };
}
