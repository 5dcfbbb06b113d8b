import type { Db, Executor } from '../platform/db.ts';
import { literal, oneTripTx } from './outbox.onetrip.ts';

// The outbox's concurrency-critical statements, one named function each. Every write after the
// claim is guarded by `claimed_by = owner`, so a relay whose lease was taken over cannot mark or
// fail an event another relay now owns.

export interface OutboxRow {
  event_id: number;
  order_id: string;
  event_type: string;
  order_version: number;
  payload: Record<string, unknown>;
  attempts: number;
  /** The trace context of the transition that wrote it (migration 200); null when tracing was off. */
  traceparent?: string | null;
}

export interface ClaimRequest {
  owner: string;
  now: Date;
  leaseMs: number;
  limit: number;
}

// A claim is a short transaction: lock due rows with SKIP LOCKED (two relays never wait on, or both
// take, the same row), stamp owner + lease, COMMIT. Nothing stays open while the sink is called;
// the lease, not a row lock, protects the event during delivery, and an expired lease is simply
// claimable again (takeover). NOT EXISTS keeps per-order version order: an event is claimable only
// when no earlier version of its order is unpublished — dead or claimed elsewhere included.
// (DISTINCT ON cannot be combined with FOR UPDATE, hence NOT EXISTS on the (order_id, order_version) index.)
const claimSql = (now: string, limit: string, owner: string, claimedUntil: string): string => `
WITH due AS (
  SELECT o.event_id FROM outbox o
  WHERE o.published_at IS NULL AND o.dead_at IS NULL
    AND o.next_attempt_at <= ${now}
    AND (o.claimed_until IS NULL OR o.claimed_until < ${now})
    AND NOT EXISTS (
      SELECT 1 FROM outbox e
      WHERE e.order_id = o.order_id AND e.order_version < o.order_version AND e.published_at IS NULL)
  ORDER BY o.event_id
  LIMIT ${limit}
  FOR UPDATE OF o SKIP LOCKED
)
UPDATE outbox SET claimed_by = ${owner}, claimed_until = ${claimedUntil}
FROM due WHERE outbox.event_id = due.event_id
RETURNING outbox.event_id, outbox.order_id, outbox.event_type, outbox.order_version, outbox.payload, outbox.attempts,
          outbox.traceparent`;

// Claims and marks commit with synchronous_commit = off: losing one to a database crash only
// makes the event deliverable again (a lost claim fences our mark via claimed_by; a lost mark leaves
// it unpublished), i.e. one more delivery, which the consumer's inbox absorbs. The commit whose
// durability matters is the consumer's (or the broker's PubAck), and it stays durable. This takes
// the relay's own fsyncs off the delivery path. Each is one round trip (outbox.onetrip.ts), not four.
const CLAIM_TX = { lockTimeoutMs: 2_000, statementTimeoutMs: 10_000, asyncCommit: true };
const MARK_TX = { lockTimeoutMs: 5_000, statementTimeoutMs: 30_000, asyncCommit: true };

export async function claimBatch(db: Db, request: ClaimRequest): Promise<OutboxRow[]> {
  const claimedUntil = new Date(request.now.getTime() + request.leaseMs);
  const sql = claimSql(
    literal.time(request.now),
    literal.int(request.limit),
    literal.text(request.owner),
    literal.time(claimedUntil),
  );
  const result = await oneTripTx<OutboxRow>(db, sql, CLAIM_TX);
  return result.rows.sort((a, b) => a.event_id - b.event_id);
}

/**
 * Marks a pass's acknowledged events published in one statement (one commit for the batch, not
 * one per event). Guarded by claimed_by: an event whose lease another relay took over is not ours
 * to mark, and that relay re-sends it. Returns how many were marked.
 */
export async function markPublishedBatch(
  db: Db,
  eventIds: readonly number[],
  owner: string,
  now: Date,
): Promise<number> {
  if (eventIds.length === 0) return 0;
  const result = await oneTripTx(
    db,
    `UPDATE outbox SET published_at = ${literal.time(now)}, claimed_until = NULL
     WHERE event_id = ANY(${literal.ints(eventIds, 'bigint')}) AND claimed_by = ${literal.text(owner)}
       AND published_at IS NULL`,
    MARK_TX,
  );
  return result.rowCount ?? 0;
}

/** Gives claimed, unpublished events back at once (a relay that will not deliver them). */
export async function releaseClaims(db: Db, eventIds: readonly number[], owner: string): Promise<number> {
  if (eventIds.length === 0) return 0;
  const result = await oneTripTx(
    db,
    `UPDATE outbox SET claimed_by = NULL, claimed_until = NULL
     WHERE event_id = ANY(${literal.ints(eventIds, 'bigint')}) AND claimed_by = ${literal.text(owner)}
       AND published_at IS NULL`,
    MARK_TX,
  );
  return result.rowCount ?? 0;
}

export interface FailureRecord {
  eventId: number;
  owner: string;
  now: Date;
  error: string;
  nextAttemptAt: Date;
  maxAttempts: number;
}

/**
 * Counts a failed attempt and releases the claim. At `maxAttempts` the event is parked (`dead_at`):
 * kept, listed, re-drivable, never dropped. Returns whether it is now dead, or null when the claim
 * was no longer ours.
 */
export async function tryRecordFailure(db: Executor, failure: FailureRecord): Promise<{ dead: boolean } | null> {
  const result = await db.query<{ dead: boolean }>(
    `UPDATE outbox SET attempts = attempts + 1, last_error = left($3, 2000), next_attempt_at = $4,
       claimed_by = NULL, claimed_until = NULL,
       dead_at = CASE WHEN attempts + 1 >= $5 THEN $6::timestamptz END
     WHERE event_id = $1 AND claimed_by = $2 AND published_at IS NULL
     RETURNING dead_at IS NOT NULL AS dead`,
    [failure.eventId, failure.owner, failure.error, failure.nextAttemptAt, failure.maxAttempts, failure.now],
  );
  return result.rows[0] ?? null;
}

/** Parks an event at once (an unknown type will not get better by retrying). */
export async function tryParkDead(
  db: Executor,
  eventId: number,
  owner: string,
  reason: string,
  now: Date,
): Promise<boolean> {
  const result = await db.query(
    `UPDATE outbox SET attempts = attempts + 1, last_error = left($3, 2000), dead_at = $4,
       claimed_by = NULL, claimed_until = NULL
     WHERE event_id = $1 AND claimed_by = $2 AND published_at IS NULL`,
    [eventId, owner, reason, now],
  );
  return result.rowCount === 1;
}

export interface DeadEvent {
  event_id: string;
  order_id: string;
  event_type: string;
  order_version: number;
  attempts: number;
  last_error: string | null;
  dead_at: string;
}

// Bounds one admin listing; the dead set is expected to be tiny, and paging is by event_id.
export const MAX_DEAD_LISTED = 500;

// Outbox rows carry no tenant: a tenant's view goes through the order each event is about.
const ofTenant = (param: string) =>
  `(${param}::text IS NULL OR EXISTS (SELECT 1 FROM orders t WHERE t.order_id = outbox.order_id AND t.tenant_id = ${param}))`;

export async function listDeadEvents(
  db: Executor,
  limit = 100,
  afterEventId = 0,
  tenantId?: string,
): Promise<DeadEvent[]> {
  const result = await db.query<DeadEvent>(
    `SELECT event_id::text, order_id, event_type, order_version, attempts, last_error,
            to_char(dead_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS dead_at
     FROM outbox WHERE dead_at IS NOT NULL AND published_at IS NULL AND event_id > $2 AND ${ofTenant('$3')}
     ORDER BY event_id LIMIT $1`,
    [Math.min(Math.max(limit, 1), MAX_DEAD_LISTED), afterEventId, tenantId ?? null],
  );
  return result.rows;
}

/** Puts dead events (all, or the given ids) back in line with a fresh attempt budget. */
export async function redriveDead(
  db: Executor,
  eventIds: readonly string[] | undefined,
  now: Date,
  tenantId?: string,
): Promise<number> {
  const result = await db.query(
    `UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = $1, claimed_by = NULL, claimed_until = NULL
     WHERE dead_at IS NOT NULL AND published_at IS NULL AND ($2::bigint[] IS NULL OR event_id = ANY($2::bigint[]))
       AND ${ofTenant('$3')}`,
    [now, eventIds === undefined ? null : eventIds.map((id) => BigInt(id).toString()), tenantId ?? null],
  );
  return result.rowCount ?? 0;
}

/** An operator's "deliver now": pending events waiting out a backoff become due (used by drain). */
export async function bringDueForward(db: Executor, now: Date): Promise<number> {
  const result = await db.query(
    `UPDATE outbox SET next_attempt_at = $1
     WHERE published_at IS NULL AND dead_at IS NULL AND next_attempt_at > $1`,
    [now],
  );
  return result.rowCount ?? 0;
}
