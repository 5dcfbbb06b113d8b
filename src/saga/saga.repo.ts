import type { Executor, Tx } from '../platform/db.ts';

// The saga module's tables: `sagas` (the runner's schedule) and `saga_journal` (one row per step
// attempt). SQL only here; the runner decides.

export type Direction = 'do' | 'undo';
export type EntryStatus = 'STARTED' | 'DONE' | 'REFUSED' | 'FAILED' | 'UNKNOWN';
export type SagaState = 'FORWARD' | 'COMPENSATING' | 'DONE' | 'COMPENSATED';

export interface JournalEntry {
  seq: number;
  step: string;
  direction: Direction;
  key: string;
  status: EntryStatus;
  receipt: string | null;
  error: string | null;
  at: Date;
}

export interface Saga {
  sagaId: string;
  flow: string;
  state: SagaState;
  attempts: number;
  nextAttemptAt: Date;
  deadlineAt: Date;
  attention: string | null;
}

const clip = (s: string | null | undefined) => (s == null ? null : s.slice(0, 500));

/**
 * Starts the after-PAID saga of up to `limit` PAID, unfulfilled orders that have none (of `only`,
 * when given), in one statement: each saga row with the two steps pay already did, journalled DONE
 * (`reserve` under the order's reservation key, `charge` under its id, as ORDER_FLOW names them),
 * once per order. It reads the orders module's `orders` (read only) so that the candidates are
 * orders without a saga: sagas waiting out a backoff never hide the orders paid after them.
 */
export async function startOrderSagas(
  db: Executor,
  flow: string,
  now: Date,
  deadlineAt: Date,
  limit: number,
  only?: readonly string[],
): Promise<number> {
  const result = await db.query<{ started: number }>({
    name: 'saga-start-orders',
    text: `WITH o AS (
             SELECT o.order_id, o.reservation_key, o.quantity, o.sku, o.amount FROM orders o
             WHERE o.status = 'PAID' AND o.fulfilment_status = 'PENDING'
               AND ($5::text[] IS NULL OR o.order_id = ANY($5))
               AND NOT EXISTS (SELECT 1 FROM sagas x WHERE x.saga_id = o.order_id)
             ORDER BY o.updated_at LIMIT $4),
           s AS (
             INSERT INTO sagas (saga_id, flow, state, next_attempt_at, deadline_at, started_at, updated_at)
             SELECT order_id, $1, 'FORWARD', $2, $3, $2, $2 FROM o ORDER BY order_id
             ON CONFLICT (saga_id) DO NOTHING RETURNING saga_id),
           j AS (
             INSERT INTO saga_journal (saga_id, step, direction, key, status, receipt, error, at)
             SELECT o.order_id, x.step, 'do', x.key, 'DONE', x.receipt, NULL, $2
             FROM s JOIN o ON o.order_id = s.saga_id,
                  LATERAL (VALUES (1, 'reserve', o.reservation_key, o.quantity || ' × ' || o.sku || ' confirmed'),
                                  (2, 'charge', o.order_id, 'charged ' || o.amount)) AS x(n, step, key, receipt)
             ORDER BY o.order_id, x.n)
           SELECT count(*)::int AS started FROM s`,
    values: [flow, now, deadlineAt, limit, only ?? null],
  });
  return result.rows[0]?.started ?? 0;
}

interface SagaRow {
  saga_id: string;
  flow: string;
  state: SagaState;
  attempts: number;
  next_attempt_at: Date;
  deadline_at: Date;
  attention: string | null;
}

const toSaga = (r: SagaRow): Saga => ({
  sagaId: r.saga_id,
  flow: r.flow,
  state: r.state,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  deadlineAt: r.deadline_at,
  attention: r.attention,
});

export async function findSaga(db: Executor, sagaId: string): Promise<Saga | undefined> {
  const result = await db.query<SagaRow>('SELECT * FROM sagas WHERE saga_id = $1', [sagaId]);
  return result.rows[0] ? toSaga(result.rows[0]) : undefined;
}

/**
 * Claims unfinished sagas that are due. SKIP LOCKED plus a short claim lets several recovery
 * processes divide them; a claim of a process that died lapses on its own.
 */
export async function claimDueSagas(
  tx: Tx,
  now: Date,
  claimUntil: Date,
  limit: number,
  only?: readonly string[],
  /** Sagas this pass examined already: the next pass retries them, not this one. */
  exclude: readonly string[] = [],
): Promise<Saga[]> {
  const result = await tx.query<SagaRow>(
    `UPDATE sagas s SET claimed_until = $2
     FROM (SELECT saga_id FROM sagas
           WHERE state IN ('FORWARD', 'COMPENSATING') AND next_attempt_at <= $1
             AND (claimed_until IS NULL OR claimed_until < $1)
             AND ($4::text[] IS NULL OR saga_id = ANY($4))
             AND NOT (saga_id = ANY($5::text[]))
           ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) c
     WHERE s.saga_id = c.saga_id RETURNING s.*`,
    [now, claimUntil, limit, only ?? null, exclude],
  );
  return result.rows.map(toSaga);
}

/** How an attempt ended: the state reached, whether it is still pending, its next attempt, a note. */
export interface SagaAttemptEnd {
  sagaId: string;
  state: SagaState;
  pending: boolean;
  nextAttemptAt: Date;
  attention: string | null;
}

/**
 * Ends attempts, one statement for all: the state reached, the backoff (attempts counted only
 * while not finished), a note; the claim released.
 */
export async function finishSagaAttempts(db: Executor, ends: readonly SagaAttemptEnd[], now: Date): Promise<void> {
  if (ends.length === 0) return;
  await db.query({
    name: 'saga-finish-attempts',
    text: `UPDATE sagas s SET state = f.state, attempts = CASE WHEN f.pending THEN s.attempts + 1 ELSE 0 END,
             next_attempt_at = f.next_at,
             attention = CASE WHEN f.pending THEN coalesce(f.attention, s.attention) ELSE NULL END,
             claimed_until = NULL, updated_at = $6
           FROM unnest($1::text[], $2::text[], $3::bool[], $4::timestamptz[], $5::text[])
                AS f(saga_id, state, pending, next_at, attention)
           WHERE s.saga_id = f.saga_id`,
    values: [
      ends.map((e) => e.sagaId),
      ends.map((e) => e.state),
      ends.map((e) => e.pending),
      ends.map((e) => e.nextAttemptAt),
      ends.map((e) => clip(e.attention)),
      now,
    ],
  });
}

export async function journalOf(db: Executor, sagaId: string): Promise<JournalEntry[]> {
  const result = await db.query<JournalEntry>(
    'SELECT seq::int AS seq, step, direction, key, status, receipt, error, at FROM saga_journal WHERE saga_id = $1 ORDER BY seq',
    [sagaId],
  );
  return result.rows;
}

/** The journals of many sagas, read at once (a claimed round), each in step order. */
export async function journalsOf(db: Executor, sagaIds: readonly string[]): Promise<Map<string, JournalEntry[]>> {
  const result = await db.query<JournalEntry & { saga_id: string }>(
    'SELECT saga_id, seq::int AS seq, step, direction, key, status, receipt, error, at FROM saga_journal WHERE saga_id = ANY($1::text[]) ORDER BY saga_id, seq',
    [sagaIds],
  );
  const journals = new Map<string, JournalEntry[]>(sagaIds.map((id) => [id, []]));
  for (const { saga_id: sagaId, ...entry } of result.rows) journals.get(sagaId)?.push(entry);
  return journals;
}

/** A settled journal row (a local step, or a step already done before the saga began). */
export async function insertEntry(tx: Executor, sagaId: string, e: Omit<JournalEntry, 'seq'>): Promise<number> {
  const result = await tx.query<{ seq: number }>(
    `INSERT INTO saga_journal (saga_id, step, direction, key, status, receipt, error, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING seq::int AS seq`,
    [sagaId, e.step, e.direction, e.key, e.status, clip(e.receipt), clip(e.error), e.at],
  );
  return result.rows[0]?.seq ?? 0;
}

/** Settles a STARTED attempt with what the call answered (in the same transaction as the step's local effect). */
export async function trySettleEntry(
  tx: Tx,
  seq: number,
  status: Exclude<EntryStatus, 'STARTED'>,
  receipt: string | null,
  error: string | null,
  nextAttemptAt: Date | null,
): Promise<boolean> {
  const result = await tx.query(
    `UPDATE saga_journal SET status = $2, receipt = $3, error = $4, next_attempt_at = $5 WHERE seq = $1 AND status IN ('STARTED', 'UNKNOWN')`,
    [seq, status, clip(receipt), clip(error), nextAttemptAt],
  );
  return (result.rowCount ?? 0) === 1;
}

/** Sagas a person must look at: past their deadline unfinished, or carrying a note. */
export async function listSagasNeedingAttention(
  db: Executor,
  now: Date,
): Promise<
  Array<{
    saga_id: string;
    state: SagaState;
    attention: string | null;
    deadline_at: Date;
    updated_at: Date;
    attempts: number;
  }>
> {
  const result = await db.query<{
    saga_id: string;
    state: SagaState;
    attention: string | null;
    deadline_at: Date;
    updated_at: Date;
    attempts: number;
  }>(
    `SELECT saga_id, state, attention, deadline_at, updated_at, attempts FROM sagas
     WHERE state IN ('FORWARD', 'COMPENSATING') AND (deadline_at <= $1 OR attention IS NOT NULL) ORDER BY deadline_at LIMIT 100`,
    [now],
  );
  return result.rows;
}

export async function countSagasByState(db: Executor): Promise<Record<string, number>> {
  const result = await db.query<{ state: string; n: number }>(
    'SELECT state, count(*)::int AS n FROM sagas GROUP BY state',
  );
  return Object.fromEntries(result.rows.map((r) => [r.state, r.n]));
}
