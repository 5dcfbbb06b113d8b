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

/** Creates the saga row if there is none; says whether it did. */
export async function tryInsertSaga(
  tx: Tx,
  sagaId: string,
  flow: string,
  now: Date,
  deadlineAt: Date,
): Promise<boolean> {
  const result = await tx.query(
    `INSERT INTO sagas (saga_id, flow, state, next_attempt_at, deadline_at, started_at, updated_at) VALUES ($1, $2, 'FORWARD', $3, $4, $3, $3)
     ON CONFLICT (saga_id) DO NOTHING`,
    [sagaId, flow, now, deadlineAt],
  );
  return (result.rowCount ?? 0) === 1;
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

/** Of `ids`, those that already have a saga (one indexed read instead of one insert attempt each). */
export async function existingSagas(db: Executor, ids: readonly string[]): Promise<Set<string>> {
  const result = await db.query<{ saga_id: string }>('SELECT saga_id FROM sagas WHERE saga_id = ANY($1)', [ids]);
  return new Set(result.rows.map((r) => r.saga_id));
}

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
): Promise<Saga[]> {
  const result = await tx.query<SagaRow>(
    `UPDATE sagas s SET claimed_until = $2
     FROM (SELECT saga_id FROM sagas
           WHERE state IN ('FORWARD', 'COMPENSATING') AND next_attempt_at <= $1
             AND (claimed_until IS NULL OR claimed_until < $1)
             AND ($4::text[] IS NULL OR saga_id = ANY($4))
           ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) c
     WHERE s.saga_id = c.saga_id RETURNING s.*`,
    [now, claimUntil, limit, only ?? null],
  );
  return result.rows.map(toSaga);
}

/** Ends an attempt: the state reached, the backoff (attempts counted only while not finished), a note. */
export async function finishSagaAttempt(
  db: Executor,
  sagaId: string,
  state: SagaState,
  pending: boolean,
  nextAttemptAt: Date,
  attention: string | null,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE sagas SET state = $2, attempts = CASE WHEN $3 THEN attempts + 1 ELSE 0 END, next_attempt_at = $4,
       attention = CASE WHEN $3 THEN coalesce($5, attention) ELSE NULL END, claimed_until = NULL, updated_at = $6
     WHERE saga_id = $1`,
    [sagaId, state, pending, nextAttemptAt, clip(attention), now],
  );
}

export async function journalOf(db: Executor, sagaId: string): Promise<JournalEntry[]> {
  const result = await db.query<JournalEntry>(
    'SELECT seq::int AS seq, step, direction, key, status, receipt, error, at FROM saga_journal WHERE saga_id = $1 ORDER BY seq',
    [sagaId],
  );
  return result.rows;
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
  Array<{ saga_id: string; state: SagaState; attention: string | null; deadline_at: Date; updated_at: Date }>
> {
  const result = await db.query<{
    saga_id: string;
    state: SagaState;
    attention: string | null;
    deadline_at: Date;
    updated_at: Date;
  }>(
    `SELECT saga_id, state, attention, deadline_at, updated_at FROM sagas
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
