import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { invariant } from '../platform/errors.ts';
import { systemClock, type Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db.ts';
import { backoffDelayMs } from './backoff.ts';
import { isEventType, type OutboxEvent, type Sink } from './outbox.events.ts';
import { bringDueForward, claimBatch, tryMarkPublished, tryParkDead, tryRecordFailure, type OutboxRow } from './outbox.repo.ts';

// Limits, each with its reason.
const MAX_BATCH_SIZE = 500; // one claim statement locks at most this many rows
const MAX_DRAIN_PASSES = 1_000; // a drain ends even if writers keep the outbox full
const DEFAULT_BACKOFF_MAX_MS = 60_000; // a sink that is down is retried at least once a minute

/** Named fault points: inert unless a test arms them (STYLE 14). Production wiring never sets these. */
export interface RelayFaults {
  /** Runs after the sink acknowledged an event and before it is marked published (kill -9 / pause window). */
  afterDeliverBeforeMark?: (event: OutboxEvent) => Promise<void>;
}

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
  faults?: RelayFaults;
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

export function createRelay(options: RelayOptions): Relay {
  const clock = options.clock ?? systemClock;
  const owner = options.owner ?? defaultOwner();
  const backoffMaxMs = options.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS;
  const deliverTimeoutMs = options.deliverTimeoutMs ?? Math.max(1, Math.floor(options.leaseMs / 2));
  const onError = options.onError ?? ((error: unknown) => console.error(`[relay ${owner}]`, error));
  invariant(options.batchSize >= 1 && options.batchSize <= MAX_BATCH_SIZE, `batchSize must be 1..${MAX_BATCH_SIZE}`);
  invariant(options.maxAttempts >= 1, 'maxAttempts must be >= 1');
  invariant(options.backoffBaseMs >= 1, 'backoffBaseMs must be >= 1');
  invariant(deliverTimeoutMs < options.leaseMs, 'deliverTimeoutMs must be below leaseMs');

  /** true = the sink acknowledged it. */
  async function deliverOne(row: OutboxRow): Promise<boolean> {
    const event = toEvent(row);
    if (!isEventType(row.event_type)) {
      // Never skipped silently: parked with the reason, visible to listDeadEvents and integrity.
      await tryParkDead(options.db, row.event_id, owner, `unknown event type "${row.event_type}"`, clock.now());
      onError(new Error(`outbox event ${row.event_id} has unknown type "${row.event_type}"; parked as dead`));
      return false;
    }
    try {
      await withTimeout(options.sink.deliver(event), deliverTimeoutMs, `delivery of event ${row.event_id}`);
    } catch (error) {
      const attempts = row.attempts + 1;
      const now = clock.now();
      const nextAttemptAt = new Date(now.getTime() + backoffDelayMs(attempts, options.backoffBaseMs, backoffMaxMs));
      const message = (error as Error).message ?? String(error);
      await tryRecordFailure(options.db, { eventId: row.event_id, owner, now, error: message, nextAttemptAt, maxAttempts: options.maxAttempts });
      return false;
    }
    await options.faults?.afterDeliverBeforeMark?.(event);
    // A false here means our lease was taken over and the event will be sent again: at least once.
    await tryMarkPublished(options.db, row.event_id, owner, clock.now());
    return true;
  }

  async function runOnce(): Promise<PassResult> {
    const rows = await claimBatch(options.db, { owner, now: clock.now(), leaseMs: options.leaseMs, limit: options.batchSize });
    // The batch holds at most one event per order (the claim's NOT EXISTS), so delivering it
    // concurrently cannot reorder an order's events.
    const outcomes = await Promise.allSettled(rows.map(deliverOne));
    const broken = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (broken) throw broken.reason; // a database fault; unmarked events come back after their lease
    const delivered = outcomes.filter((outcome) => outcome.status === 'fulfilled' && outcome.value).length;
    return { delivered, failed: rows.length - delivered };
  }

  let stopping = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  async function drain(drainOptions: { force?: boolean } = {}, shouldStop: () => boolean = () => false): Promise<PassResult> {
    if (drainOptions.force) await bringDueForward(options.db, clock.now());
    const total = { delivered: 0, failed: 0 };
    for (let pass = 0; pass < MAX_DRAIN_PASSES && !shouldStop(); pass++) {
      const result = await runOnce();
      total.delivered += result.delivered;
      total.failed += result.failed;
      if (result.delivered + result.failed === 0) break;
    }
    return total;
  }

  async function run(intervalMs: number): Promise<void> {
    while (!stopping) {
      try {
        await drain({}, () => stopping);
      } catch (error) {
        onError(error);
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
    owner,
    runOnce,
    drain: (drainOptions) => drain(drainOptions),
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
