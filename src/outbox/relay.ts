import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { invariant } from '../platform/errors.ts';
import { systemClock, type Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db.ts';
import { backoffDelayMs } from '../platform/backoff.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import { isEventType, type OutboxEvent, type Sink } from './outbox.events.ts';
import {
  bringDueForward,
  claimBatch,
  markPublishedBatch,
  tryParkDead,
  tryRecordFailure,
  type OutboxRow,
} from './outbox.repo.ts';

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
  stop(): Promise<void>;
}

export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

function toEvent(row: OutboxRow): OutboxEvent {
  const { event_id, order_id, event_type, order_version, payload } = row;
  return { event_id: String(event_id), order_id, event_type, order_version, payload };
}

async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms}ms`)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

interface RelayContext {
  db: Db;
  sink: Sink;
  clock: Clock;
  owner: string;
  leaseMs: number;
  batchSize: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  deliverTimeoutMs: number;
  onError: (error: unknown) => void;
}

function nowOf(ctx: RelayContext): Date {
  return ctx.clock.now();
}

async function recordFailedAttempt(ctx: RelayContext, row: OutboxRow, error: unknown): Promise<void> {
  const now = nowOf(ctx);
  const delayMs = backoffDelayMs(row.attempts + 1, ctx.backoffBaseMs, ctx.backoffMaxMs);
  await tryRecordFailure(ctx.db, {
    eventId: row.event_id,
    owner: ctx.owner,
    now,
    error: (error as Error | null)?.message ?? String(error),
    nextAttemptAt: new Date(now.getTime() + delayMs),
    maxAttempts: ctx.maxAttempts,
  });
}

/** Delivers one claimed event; true = the sink acknowledged it (not yet marked). Throws only on a database fault. */
async function deliverOne(ctx: RelayContext, row: OutboxRow): Promise<boolean> {
  if (!isEventType(row.event_type)) {
    // Never skipped silently: parked with the reason, visible to listDeadEvents and integrity.
    await tryParkDead(ctx.db, row.event_id, ctx.owner, `unknown event type "${row.event_type}"`, nowOf(ctx));
    ctx.onError(new Error(`outbox event ${row.event_id} has unknown type "${row.event_type}"; parked as dead`));
    return false;
  }
  const event = toEvent(row);
  try {
    await withTimeout(ctx.sink.deliver(event), ctx.deliverTimeoutMs, `delivery of event ${row.event_id}`);
  } catch (error) {
    await recordFailedAttempt(ctx, row, error);
    return false;
  }
  // After the sink acknowledged, before the mark: the kill -9 / pause window of C29-12 and the lease test.
  await faultPoint('relay.after-deliver-before-mark', { owner: ctx.owner, eventId: event.event_id });
  return true;
}

async function runPass(ctx: RelayContext): Promise<PassResult> {
  const rows = await claimBatch(ctx.db, {
    owner: ctx.owner,
    now: nowOf(ctx),
    leaseMs: ctx.leaseMs,
    limit: ctx.batchSize,
  });
  // The batch holds at most one event per order (the claim's NOT EXISTS), so delivering it
  // concurrently cannot reorder an order's events.
  const outcomes = await Promise.allSettled(rows.map((row) => deliverOne(ctx, row)));
  // Marked only after the ack (at least once), all of the pass in one statement. An event not
  // marked because our lease was taken over is re-sent by its new owner; the consumer's inbox
  // absorbs the copy.
  const acknowledged = rows
    .filter((_, i) => outcomes[i]?.status === 'fulfilled' && (outcomes[i] as PromiseFulfilledResult<boolean>).value)
    .map((row) => row.event_id);
  await markPublishedBatch(ctx.db, acknowledged, ctx.owner, nowOf(ctx));
  const broken = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (broken) throw broken.reason; // a database fault; unmarked events come back after their lease
  return { delivered: acknowledged.length, failed: rows.length - acknowledged.length };
}

async function drainPasses(ctx: RelayContext, force: boolean, shouldStop: () => boolean): Promise<PassResult> {
  if (force) await bringDueForward(ctx.db, nowOf(ctx));
  const total = { delivered: 0, failed: 0 };
  for (let pass = 0; pass < MAX_DRAIN_PASSES && !shouldStop(); pass++) {
    const result = await runPass(ctx);
    total.delivered += result.delivered;
    total.failed += result.failed;
    if (result.delivered + result.failed === 0) break;
  }
  return total;
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

  async function run(intervalMs: number): Promise<void> {
    while (!stopping) {
      try {
        await drainPasses(ctx, false, () => stopping);
      } catch (error) {
        ctx.onError(error); // a database fault: keep polling, the next pass may succeed
      }
      if (stopping) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
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
    async stop() {
      stopping = true;
      wake?.();
      await loop;
      loop = undefined;
    },
  };
}
