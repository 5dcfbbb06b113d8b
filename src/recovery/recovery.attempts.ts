import type { Executor } from '../platform/db.ts';

// Recovery's own record of its last attempt on each order it is still chasing (migration 191):
// what the provider or the database said and when the order is next claimable. The attempt count
// and the backoff that the claim obeys stay on the order (src/orders/find/recovery.ts); this is
// what a person reads to know why an order is stuck.

/** Longest `last_error` kept: a provider's raw body can be kilobytes. */
export const LAST_ERROR_MAX = 2000;

export interface AttemptRecord {
  orderId: string;
  /** Why the order is still unfinished; undefined: it converged (its record is deleted). */
  pending: string | undefined;
  nextAt: Date | null;
}

/**
 * Records one claimed batch's attempts in one statement: an upsert for each order left pending, a
 * delete for each that converged. Called after the batch's bookkeeping on the orders; a failure
 * loses only this explanation, never the order's own schedule.
 */
export async function recordAttempts(db: Executor, at: Date, records: readonly AttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  const pending = records.filter((r) => r.pending !== undefined);
  const done = records.filter((r) => r.pending === undefined).map((r) => r.orderId);
  await db.query(
    `WITH gone AS (DELETE FROM recovery_attempts WHERE order_id = ANY($5::text[]))
     INSERT INTO recovery_attempts (order_id, attempted_at, last_error, next_attempt_at)
     SELECT a.order_id, $1, left(a.last_error, ${LAST_ERROR_MAX}), a.next_at
     FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS a(order_id, last_error, next_at)
     ON CONFLICT (order_id) DO UPDATE
       SET attempted_at = EXCLUDED.attempted_at, last_error = EXCLUDED.last_error,
           next_attempt_at = EXCLUDED.next_attempt_at`,
    [at, pending.map((r) => r.orderId), pending.map((r) => r.pending ?? ''), pending.map((r) => r.nextAt), done],
  );
}

export interface LastAttempt {
  attemptedAt: Date;
  lastError: string;
  nextAttemptAt: Date | null;
}

export async function findLastAttempt(db: Executor, orderId: string): Promise<LastAttempt | undefined> {
  const result = await db.query<{ attempted_at: Date; last_error: string; next_attempt_at: Date | null }>(
    'SELECT attempted_at, last_error, next_attempt_at FROM recovery_attempts WHERE order_id = $1',
    [orderId],
  );
  const row = result.rows[0];
  return row
    ? { attemptedAt: row.attempted_at, lastError: row.last_error, nextAttemptAt: row.next_attempt_at }
    : undefined;
}
