import { backoffDelayMs } from '../platform/backoff.ts';
import type { Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import { isEventType, type OutboxEvent, type Sink } from './outbox.events.ts';
import { markPublishedBatch, tryParkDead, tryRecordFailure, type OutboxRow } from './outbox.repo.ts';
import { deliverySpan } from './relay.trace.ts';

// The deliver half of a relay pass (relay.ts has the claim, the mark and the loop): one event at a
// time for a sink without `deliverBatch`, one batch call otherwise. Both return the acknowledged
// rows, which the pass then marks in one statement.

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

export interface RelayContext {
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
  onPass: ((result: { delivered: number; failed: number }, ms: number) => void) | undefined;
  /**
   * What a database fault left undone, settled before the next claim: events the sink acknowledged
   * whose mark failed, and claims a release could not give back. Without it they would wait out
   * their lease (30 s) after every blip, although this relay still knows what happened to them.
   */
  owed: { marks: Set<number>; releases: Set<number> };
}

export function nowOf(ctx: RelayContext): Date {
  return ctx.clock.now();
}

export function oweMarks(ctx: RelayContext, eventIds: readonly number[]): void {
  for (const id of eventIds) ctx.owed.marks.add(id);
}

export function oweReleases(ctx: RelayContext, eventIds: readonly number[]): void {
  for (const id of eventIds) ctx.owed.releases.add(id);
}

/** Marks acknowledged events; if the statement fails they are owed, and marked before the next claim. */
export function markOrOwe(ctx: RelayContext, eventIds: number[]): Promise<number> {
  return markPublishedBatch(ctx.db, eventIds, ctx.owner, nowOf(ctx)).catch((error: unknown) => {
    oweMarks(ctx, eventIds);
    throw error;
  });
}

/** A refused delivery backs off; if that cannot be written, the claim is owed back (sent again soon, attempt not counted). */
export async function recordFailedAttempt(ctx: RelayContext, row: OutboxRow, error: unknown): Promise<void> {
  const now = nowOf(ctx);
  const delayMs = backoffDelayMs(row.attempts + 1, ctx.backoffBaseMs, ctx.backoffMaxMs);
  await tryRecordFailure(ctx.db, {
    eventId: row.event_id,
    owner: ctx.owner,
    now,
    error: (error as Error | null)?.message ?? String(error),
    nextAttemptAt: new Date(now.getTime() + delayMs),
    maxAttempts: ctx.maxAttempts,
  }).catch((fault: unknown) => {
    oweReleases(ctx, [row.event_id]);
    throw fault;
  });
}

/** Delivers one claimed event; true = the sink acknowledged it (not yet marked). Throws only on a database fault. */
export async function deliverOne(ctx: RelayContext, row: OutboxRow): Promise<boolean> {
  if (!isEventType(row.event_type)) {
    // Never skipped silently: parked with the reason, visible to listDeadEvents and integrity.
    await parkUnknown(ctx, row);
    return false;
  }
  const event = toEvent(row);
  try {
    await deliverySpan([row], () =>
      withTimeout(ctx.sink.deliver(event), ctx.deliverTimeoutMs, `delivery of event ${row.event_id}`),
    );
  } catch (error) {
    await recordFailedAttempt(ctx, row, error);
    return false;
  }
  // After the sink acknowledged, before the mark: the kill -9 / pause window of C29-12 and the lease test.
  await faultPoint('relay.after-deliver-before-mark', { owner: ctx.owner, eventId: event.event_id });
  return true;
}

/** Parks an event of an unknown type at once: never sent, never skipped silently. */
async function parkUnknown(ctx: RelayContext, row: OutboxRow): Promise<void> {
  await tryParkDead(ctx.db, row.event_id, ctx.owner, `unknown event type "${row.event_type}"`, nowOf(ctx)).catch(
    (fault: unknown) => {
      oweReleases(ctx, [row.event_id]); // claimed again, and parked then
      throw fault;
    },
  );
  ctx.onError(new Error(`outbox event ${row.event_id} has unknown type "${row.event_type}"; parked as dead`));
}

/**
 * The batch path: one `deliverBatch` call for the pass (one signed request, or many publishes in
 * flight), then per event: acknowledged ones go on to the mark, refused ones back off alone.
 * Returns the acknowledged rows. Throws only on a database fault.
 */
export async function deliverAsBatch(
  ctx: RelayContext,
  rows: OutboxRow[],
  deliverBatch: NonNullable<Sink['deliverBatch']>,
): Promise<OutboxRow[]> {
  const valid = rows.filter((row) => isEventType(row.event_type));
  for (const row of rows) if (!isEventType(row.event_type)) await parkUnknown(ctx, row);
  if (valid.length === 0) return [];
  let answers: (Error | null)[];
  try {
    const what = `delivery of a batch of ${valid.length} events`;
    answers = await deliverySpan(valid, () =>
      withTimeout(deliverBatch.call(ctx.sink, valid.map(toEvent)), ctx.deliverTimeoutMs, what),
    );
  } catch (error) {
    answers = valid.map(() => error as Error);
  }
  const acknowledged = valid.filter((_, i) => answers[i] === null);
  const recorded = await Promise.allSettled(
    valid.map((row, i) => (answers[i] === null ? undefined : recordFailedAttempt(ctx, row, answers[i] ?? 'no answer'))),
  );
  const fault = recorded.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (fault) {
    // A database fault: the acknowledged ones are owed a mark (the refused ones a release, above).
    oweMarks(ctx, ids(acknowledged));
    throw fault.reason;
  }
  // The same window as deliverOne's, once per acknowledged event (the hooks may hold it open).
  await Promise.all(
    acknowledged.map((row) =>
      faultPoint('relay.after-deliver-before-mark', { owner: ctx.owner, eventId: String(row.event_id) }),
    ),
  );
  return acknowledged;
}

export async function deliverEach(ctx: RelayContext, rows: OutboxRow[]): Promise<OutboxRow[]> {
  // The batch holds at most one event per order (the claim's NOT EXISTS), so delivering it
  // concurrently cannot reorder an order's events.
  const outcomes = await Promise.allSettled(rows.map((row) => deliverOne(ctx, row)));
  const broken = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  const acknowledged = rows.filter(
    (_, i) => outcomes[i]?.status === 'fulfilled' && (outcomes[i] as PromiseFulfilledResult<boolean>).value,
  );
  if (broken) {
    // A database fault: mark what was acknowledged (or owe it), then report; the claims whose
    // failure could not be recorded are owed back (recordFailedAttempt).
    await markOrOwe(ctx, ids(acknowledged));
    throw broken.reason;
  }
  return acknowledged;
}

export const ids = (rows: OutboxRow[]): number[] => rows.map((row) => row.event_id);
