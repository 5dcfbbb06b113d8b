import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { invariant } from '../platform/errors.ts';
import { systemClock, type Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db.ts';
import type { Sink } from './outbox.events.ts';
import {
  deliverAsBatch,
  deliverEach,
  ids,
  markOrOwe,
  nowOf,
  oweMarks,
  oweReleases,
  type RelayContext,
} from './relay.deliver.ts';
import { bringDueForward, claimBatch, markPublishedBatch, releaseClaims, type OutboxRow } from './outbox.repo.ts';

// Limits, each with its reason.
const MAX_BATCH_SIZE = 500; // one claim statement locks at most this many rows
const MAX_DRAIN_PASSES = 1_000; // a drain ends even if writers keep the outbox full
const DEFAULT_BACKOFF_MAX_MS = 60_000; // a sink that is down is retried at least once a minute

export interface RelayOptions {
  db: Db;
  sink: Sink;
  clock?: Clock;
  /** Unique per relay instance; written to claimed_by. Default host:pid:random. */
  owner?: string;
  /** How long a claim protects an event; a claim past it is taken over by another relay. */
  leaseMs: number;
  batchSize: number;
  /** Failed deliveries before the event is parked as dead. */
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs?: number;
  /** Bound on one sink call; must stay below the lease so a slow sink cannot outlive its claim. */
  deliverTimeoutMs?: number;
  onError?: (error: unknown) => void;
  /** Observes each pass of a drain: its result and ms from its rows in hand to its mark sent (metrics, the bench). */
  onPass?: (result: PassResult, ms: number) => void;
}

export interface PassResult {
  delivered: number;
  failed: number;
}

export interface Relay {
  readonly owner: string;
  runOnce(): Promise<PassResult>;
  /** Runs passes until nothing is deliverable now. `force` first makes backed-off events due. */
  drain(options?: { force?: boolean }): Promise<PassResult>;
  start(intervalMs: number): void;
  /**
   * Something was inserted (LISTEN/NOTIFY): run a drain now instead of at the next poll. Wakes
   * during a drain coalesce into one more drain right after it.
   */
  wake(): void;
  stop(): Promise<void>;
}

export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

async function runPass(ctx: RelayContext): Promise<PassResult> {
  await settleOwed(ctx);
  const rows = await claimNext(ctx);
  if (rows.length === 0) return { delivered: 0, failed: 0 };
  const acknowledged = await deliverRows(ctx, rows);
  // Marked only after the ack (at least once), all of the pass in one statement. An event not
  // marked because our lease was taken over is re-sent by its new owner; the consumer's inbox
  // absorbs the copy.
  await markOrOwe(ctx, ids(acknowledged));
  return { delivered: acknowledged.length, failed: rows.length - acknowledged.length };
}

/**
 * Settles what an earlier fault left undone, before anything new is claimed: acknowledged events
 * are marked (the guard on claimed_by makes a mark of an event taken over meanwhile a no-op) and
 * unsent claims are given back. Throws while the database still fails; the sets keep what is owed.
 */
async function settleOwed(ctx: RelayContext): Promise<void> {
  await settle(ctx.owed.marks, (owed) => markPublishedBatch(ctx.db, owed, ctx.owner, nowOf(ctx)));
  await settle(ctx.owed.releases, (owed) => releaseClaims(ctx.db, owed, ctx.owner));
}

/** Writes what is owed; forgets it only once written (what was added meanwhile stays owed). */
async function settle(owed: Set<number>, write: (eventIds: number[]) => Promise<unknown>): Promise<void> {
  if (owed.size === 0) return;
  const eventIds = [...owed];
  await write(eventIds);
  for (const id of eventIds) owed.delete(id);
}

async function claimNext(ctx: RelayContext): Promise<OutboxRow[]> {
  return claimBatch(ctx.db, { owner: ctx.owner, now: nowOf(ctx), leaseMs: ctx.leaseMs, limit: ctx.batchSize });
}

async function deliverRows(ctx: RelayContext, rows: OutboxRow[]): Promise<OutboxRow[]> {
  return ctx.sink.deliverBatch ? deliverAsBatch(ctx, rows, ctx.sink.deliverBatch) : deliverEach(ctx, rows);
}

/**
 * Passes until one claims nothing, pipelined: the next batch is claimed while this one is being
 * delivered, and a pass's mark commits while the next batch is being delivered (at most one mark
 * in flight). The sink still gets one batch at a time from a relay. Order per order is kept by
 * the claim itself: a later version is not claimable while an earlier one is unpublished, i.e.
 * until its mark has committed, which is after its ack. A claim made before the previous mark
 * committed may come back empty only because of that, so an empty one is retried once after it.
 */
async function drainPasses(ctx: RelayContext, force: boolean, shouldStop: () => boolean): Promise<PassResult> {
  await settleOwed(ctx);
  if (force) await bringDueForward(ctx.db, nowOf(ctx));
  const total = { delivered: 0, failed: 0 };
  let claimed: Promise<OutboxRow[]> | undefined = claimNext(ctx);
  let claimedBehindMark = false;
  let marking: Promise<unknown> = Promise.resolve();
  try {
    for (let pass = 0; pass < MAX_DRAIN_PASSES && claimed; pass++) {
      const rows: OutboxRow[] = await claimed;
      claimed = undefined;
      if (rows.length === 0) {
        if (!claimedBehindMark || shouldStop()) break;
        await marking;
        claimedBehindMark = false;
        claimed = claimNext(ctx);
        continue;
      }
      if (pass + 1 < MAX_DRAIN_PASSES && !shouldStop()) {
        claimed = claimNext(ctx);
        claimed.catch(() => undefined); // awaited by the next pass, or released below
        claimedBehindMark = true;
      }
      const startedAt = performance.now();
      const acknowledged = await deliverRows(ctx, rows);
      // The last pass's mark failed: these were acknowledged too, and are owed with it.
      await marking.catch((error: unknown) => {
        oweMarks(ctx, ids(acknowledged));
        throw error;
      });
      marking = markOrOwe(ctx, ids(acknowledged));
      marking.catch(() => undefined); // awaited before the next mark and at the end
      total.delivered += acknowledged.length;
      total.failed += rows.length - acknowledged.length;
      ctx.onPass?.(
        { delivered: acknowledged.length, failed: rows.length - acknowledged.length },
        performance.now() - startedAt,
      );
    }
    await marking;
    if (claimed) await releaseAhead(ctx, claimed); // the pass limit came first: give it back now
  } catch (error) {
    await marking.catch(() => undefined);
    await releaseAhead(ctx, claimed);
    throw error;
  }
  return total;
}

/** A fault mid-drain: the batch claimed ahead goes back now instead of after its lease. */
async function releaseAhead(ctx: RelayContext, claimed: Promise<OutboxRow[]> | undefined): Promise<void> {
  const rows = claimed ? await claimed.catch(() => []) : [];
  await releaseClaims(ctx.db, ids(rows), ctx.owner).catch(() => oweReleases(ctx, ids(rows)));
}

function contextOf(options: RelayOptions): RelayContext {
  const owner = options.owner ?? defaultOwner();
  const ctx: RelayContext = {
    db: options.db,
    sink: options.sink,
    clock: options.clock ?? systemClock,
    owner,
    leaseMs: options.leaseMs,
    batchSize: options.batchSize,
    maxAttempts: options.maxAttempts,
    backoffBaseMs: options.backoffBaseMs,
    backoffMaxMs: options.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS,
    deliverTimeoutMs: options.deliverTimeoutMs ?? Math.max(1, Math.floor(options.leaseMs / 2)),
    onError: options.onError ?? ((error: unknown) => console.error(`[relay ${owner}]`, error)),
    onPass: options.onPass,
    owed: { marks: new Set(), releases: new Set() },
  };
  invariant(ctx.batchSize >= 1 && ctx.batchSize <= MAX_BATCH_SIZE, `batchSize must be 1..${MAX_BATCH_SIZE}`);
  invariant(ctx.maxAttempts >= 1, 'maxAttempts must be >= 1');
  invariant(ctx.backoffBaseMs >= 1, 'backoffBaseMs must be >= 1');
  invariant(ctx.deliverTimeoutMs < ctx.leaseMs, 'deliverTimeoutMs must be below leaseMs');
  return ctx;
}

/**
 * A relay: `runOnce` is one claim → deliver → mark pass; `drain` repeats it until nothing is
 * deliverable now; `start`/`stop` is the thin background loop around `drain` (STYLE 12).
 * Any number of relays may run at once, in one process or many: PostgreSQL coordinates them.
 */
export function createRelay(options: RelayOptions): Relay {
  const ctx = contextOf(options);
  let stopping = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let wokenDuringDrain = false;

  async function run(intervalMs: number): Promise<void> {
    while (!stopping) {
      wokenDuringDrain = false;
      try {
        await drainPasses(ctx, false, () => stopping);
      } catch (error) {
        ctx.onError(error); // a database fault: keep polling, the next pass may succeed
      }
      if (stopping) break;
      if (wokenDuringDrain) continue; // rows may have committed after our last empty claim
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, intervalMs);
        function done(): void {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    }
  }

  return {
    owner: ctx.owner,
    runOnce: () => runPass(ctx),
    drain: (drainOptions = {}) => drainPasses(ctx, drainOptions.force ?? false, () => false),
    start(intervalMs: number) {
      invariant(loop === undefined, 'relay already started');
      invariant(intervalMs >= 1, 'intervalMs must be >= 1');
      stopping = false;
      loop = run(intervalMs);
    },
    wake() {
      if (wake) wake();
      else wokenDuringDrain = true;
    },
    async stop() {
      stopping = true;
      wake?.();
      await loop;
      loop = undefined;
    },
  };
}
