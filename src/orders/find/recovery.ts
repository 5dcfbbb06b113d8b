import type { Executor, Tx } from '../../platform/db.ts';
import { mutant } from '../../platform/mutations.ts';
import { UNFINISHED_STATUSES, type OrderStatus } from '../decide/states.ts';
import { listOpenNotes } from '../ops/attention.ts';

// Recovery's bookkeeping on the order (claim, misses, next attempt, the note for a person) lives
// with the order; src/recovery drives it through these functions.
// Spelled into the SQL (constants from code, not input) so the partial index orders_open (migration
// 140) applies: a statement's own status list must imply the index's predicate.
const UNFINISHED_SQL = [...UNFINISHED_STATUSES].map((s) => `'${s}'`).join(', ');
// What the claim takes: the unfinished orders that wait for the provider (PENDING and RELEASING wait
// for the stock service). A subset of UNFINISHED, so it implies orders_open's predicate too.
const CLAIMED_SQL = [...UNFINISHED_STATUSES]
  .filter((s) => s !== 'PENDING' && s !== 'RELEASING')
  .map((s) => `'${s}'`)
  .join(', ');

export interface Candidate {
  orderId: string;
  tenantId: string;
  status: OrderStatus;
  /** Its last transition: how long it has been unknown (a provider's status-sync schedule). */
  since: Date;
  /** The provider its pay recorded (issue 48): whose status-sync schedule applies; null before migration 180. */
  paymentProvider?: string | null;
  attempts: number;
  /** The claim's expiry as written: the fencing token finishAttempt checks (a claim taken over has another). */
  claim?: Date;
}

// One pass examines a bounded number of orders; the next pass takes the rest.
export const RECOVERY_BATCH = 200;

/**
 * Claims unfinished orders for this recovery process: UNKNOWN and REFUNDING always, PAYING once
 * it is older than the stale threshold (younger ones may still be in their pay request). SKIP
 * LOCKED plus a short claim lets several recovery processes divide the work without waiting on
 * each other or on a payment flow that holds the row right now.
 */
// PENDING and RELEASING wait for the stock service, not the provider: the stock pump re-sends their request (orders/queued/results.ts).
export async function claimUnfinished(
  tx: Tx,
  now: Date,
  staleBefore: Date,
  claimUntil: Date,
  tenantId?: string,
  /** Orders this pass already examined: a miss is retried by the next pass, not by this one. */
  exclude: readonly string[] = [],
): Promise<Candidate[]> {
  const result = await tx.query<{
    order_id: string;
    tenant_id: string;
    status: OrderStatus;
    updated_at: Date;
    recovery_attempts: number;
    payment_provider: string | null;
  }>(
    `UPDATE orders o SET recovery_claimed_until = $3
     FROM (SELECT order_id FROM orders
           WHERE status IN (${CLAIMED_SQL}) AND (status <> 'PAYING' OR updated_at <= $2)
             AND (recovery_claimed_until IS NULL OR recovery_claimed_until < $1)
             AND (next_recovery_at IS NULL OR next_recovery_at <= $1)
             AND ($4::text IS NULL OR tenant_id = $4) AND order_id <> ALL($5::text[])
           ORDER BY updated_at LIMIT ${RECOVERY_BATCH} FOR UPDATE SKIP LOCKED) c
     WHERE o.order_id = c.order_id
     RETURNING o.order_id, o.tenant_id, o.status, o.updated_at, o.recovery_attempts, o.payment_provider`,
    [now, staleBefore, claimUntil, tenantId ?? null, exclude],
  );
  return result.rows.map((r) => ({
    orderId: r.order_id,
    tenantId: r.tenant_id,
    status: r.status,
    since: r.updated_at,
    paymentProvider: r.payment_provider,
    attempts: r.recovery_attempts,
    claim: claimUntil,
  }));
}

/**
 * CREATED orders with a line whose unit is gone (reservation released, or HELD past its expiry).
 * Computed as a set: the gone reservations joined to the CREATED orders' first lines and to the
 * other lines' keys. Written as one EXISTS with an OR per order, PostgreSQL joined every CREATED
 * order to every gone reservation of its tenant and ran the lines' subquery per pair: 500 ms a pass
 * after a 60,000-order sale, and minutes once a tenant's released history grew (docs/benchmarks/journal.md §13).
 */
export async function claimAbandonedCreated(tx: Tx, now: Date, tenantId?: string): Promise<string[]> {
  const gone = `(r.status = 'RELEASED' OR (r.status = 'HELD' AND r.expires_at <= $1))`;
  const result = await tx.query<{ order_id: string }>(
    `SELECT o.order_id FROM orders o
     WHERE o.status = 'CREATED' AND ($2::text IS NULL OR o.tenant_id = $2) AND o.order_id IN (
       SELECT f.order_id FROM orders f JOIN reservations r ON r.tenant_id = f.tenant_id AND r.request_key = f.reservation_key
       WHERE f.status = 'CREATED' AND ${gone}
       UNION ALL
       SELECT l.order_id FROM order_lines l JOIN reservations r ON r.tenant_id = l.tenant_id AND r.request_key = l.reservation_key
       WHERE l.reservation_key IS NOT NULL AND ${gone})
     ORDER BY o.created_at LIMIT ${RECOVERY_BATCH} FOR UPDATE OF o SKIP LOCKED`,
    [now, tenantId ?? null],
  );
  return result.rows.map((r) => r.order_id);
}

/** Notes recovery writes about itself start with this; they are cleared once the order converges. */
export const STUCK_PREFIX = 'cannot converge';

/** One attempt's outcome: pending backs off (nextAt), done clears the bookkeeping. */
export interface AttemptOutcome {
  orderId: string;
  pending: boolean;
  nextAt: Date | null;
  attention: string | null;
  /** The claim this attempt was made under (its fencing token); absent: unfenced. */
  claim?: Date;
}

/**
 * Records the outcomes of attempts in one statement: done clears the bookkeeping; pending backs
 * off. Fenced per order by its claim: a recovery whose claim lapsed and was taken over by another
 * writes nothing for that order. Returns the orders written.
 */
export async function finishAttempts(db: Executor, outcomes: readonly AttemptOutcome[]): Promise<number> {
  if (outcomes.length === 0) return 0;
  const result = await db.query(
    `UPDATE orders o SET recovery_claimed_until = NULL,
       recovery_attempts = CASE WHEN a.pending THEN o.recovery_attempts + 1 ELSE 0 END,
       next_recovery_at = a.next_at,
       attention = CASE WHEN a.attention IS NOT NULL THEN a.attention
                        WHEN NOT a.pending AND o.attention LIKE $6 THEN NULL
                        ELSE o.attention END
     FROM unnest($1::text[], $2::boolean[], $3::timestamptz[], $4::text[], $5::timestamptz[])
            AS a(order_id, pending, next_at, attention, claim)
     WHERE o.order_id = a.order_id ${mutant('orders.recovery.claim-fence') ? '' : 'AND (a.claim IS NULL OR o.recovery_claimed_until = a.claim)'}`,
    [
      outcomes.map((o) => o.orderId),
      outcomes.map((o) => o.pending),
      outcomes.map((o) => o.nextAt),
      outcomes.map((o) => o.attention),
      outcomes.map((o) => o.claim ?? null),
      `${STUCK_PREFIX}%`,
    ],
  );
  return result.rowCount ?? 0;
}

/** One order's outcome (finishAttempts for one); false when its claim was taken over. */
export async function finishAttempt(
  db: Executor,
  orderId: string,
  pending: boolean,
  nextAt: Date | null,
  attention: string | null,
  claim?: Date,
): Promise<boolean> {
  return (await finishAttempts(db, [{ orderId, pending, nextAt, attention, claim }])) === 1;
}

export async function countUnfinished(db: Executor, tenantId?: string): Promise<number> {
  const result = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM orders WHERE status IN (${UNFINISHED_SQL}) AND ($1::text IS NULL OR tenant_id = $1)`,
    [tenantId ?? null],
  );
  return result.rows[0]?.n ?? 0;
}

/** The notes still open (src/orders/ops/attention.ts decides which: unacknowledged, order not moved since). */
export async function listNeedingAttention(
  db: Executor,
  tenantId?: string,
): Promise<Array<{ order_id: string; status: OrderStatus; attention: string }>> {
  return (await listOpenNotes(db, tenantId)).map((n) => ({
    order_id: n.order_id,
    status: n.status,
    attention: n.attention,
  }));
}
