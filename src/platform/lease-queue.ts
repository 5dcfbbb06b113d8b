import { inTx, type Db, type Executor, type Tx } from './db.ts';

// The claim / mark / park statements of the queued-order outboxes (stock_requests_out on the shop
// side, stock_outbox on the stock side), one named function each. Table and key names are
// constants from code (LeaseTable), never input. The relay of src/outbox has its own, tuned for
// per-order version order; these tables need none (one request per key, results deduplicated).

export interface LeaseTable {
  table: 'stock_requests_out' | 'stock_outbox';
  key: 'request_key' | 'event_id';
  /** The key column's type: keys arrive as text and are cast to it, never the column to text (that hides the primary key's index). */
  keyType: 'text' | 'bigint';
  order: 'created_at' | 'event_id';
}

export interface LeasedRow {
  key: string;
  order_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  attempts: number;
}

export interface LeaseClaim {
  owner: string;
  now: Date;
  /** A claim older than this is taken over by another process (the contract's 30 s by default). */
  leaseMs: number;
  limit: number;
}

/**
 * SKIP LOCKED: two processes never wait on, or both take, the same row; the lease stamped here
 * (owner + claimed_until) protects the row while it is delivered, and one past its lease is
 * claimable again. The owner is the fencing token: every later write is guarded by it.
 */
export async function claimLeased(db: Db, t: LeaseTable, claim: LeaseClaim): Promise<LeasedRow[]> {
  const until = new Date(claim.now.getTime() + claim.leaseMs);
  const result = await inTx(
    db,
    (tx) =>
      tx.query<LeasedRow>(
        `WITH due AS (
           SELECT ${t.key} FROM ${t.table}
           WHERE published_at IS NULL AND dead_at IS NULL AND (claimed_until IS NULL OR claimed_until < $1)
           ORDER BY ${t.order} LIMIT $2 FOR UPDATE SKIP LOCKED)
         UPDATE ${t.table} x SET claimed_by = $3, claimed_until = $4 FROM due
         WHERE x.${t.key} = due.${t.key}
         RETURNING x.${t.key}::text AS key, x.order_id, x.event_type, x.payload, x.attempts`,
        [claim.now, claim.limit, claim.owner, until],
      ),
    { lockTimeoutMs: 2_000, statementTimeoutMs: 10_000 },
  );
  return result.rows;
}

/**
 * Claim and mark at once, in the caller's transaction: for a delivery made in that same
 * transaction (both sides in one database), so the rows are published exactly when the delivery
 * commits and nothing needs a lease. SKIP LOCKED, as claimLeased: another process's take or claim
 * never waits on these rows, and a row under another's live lease is left to it.
 */
export async function takeLeased(tx: Tx, t: LeaseTable, claim: LeaseClaim): Promise<LeasedRow[]> {
  const result = await tx.query<LeasedRow>(
    `WITH due AS (
       SELECT ${t.key} FROM ${t.table}
       WHERE published_at IS NULL AND dead_at IS NULL AND (claimed_until IS NULL OR claimed_until < $1)
       ORDER BY ${t.order} LIMIT $2 FOR UPDATE SKIP LOCKED)
     UPDATE ${t.table} x SET published_at = $1, claimed_by = $3, claimed_until = NULL FROM due
     WHERE x.${t.key} = due.${t.key}
     RETURNING x.${t.key}::text AS key, x.order_id, x.event_type, x.payload, x.attempts`,
    [claim.now, claim.limit, claim.owner],
  );
  return result.rows;
}

/** Marks delivered rows, only those still ours: a process whose lease was taken over marks nothing. */
export async function markLeasedPublished(
  db: Executor,
  t: LeaseTable,
  keys: readonly string[],
  owner: string,
  now: Date,
): Promise<number> {
  if (keys.length === 0) return 0;
  const result = await db.query(
    `UPDATE ${t.table} SET published_at = $3, claimed_until = NULL
     WHERE ${t.key} = ANY($1::${t.keyType}[]) AND claimed_by = $2 AND published_at IS NULL`,
    [keys, owner, now],
  );
  return result.rowCount ?? 0;
}

/** A failed delivery: counted, the claim released for the next pass (fenced by owner). */
export async function releaseLeasedAfterFailure(
  db: Executor,
  t: LeaseTable,
  key: string,
  owner: string,
  error: string,
): Promise<void> {
  await db.query(
    `UPDATE ${t.table} SET attempts = attempts + 1, last_error = $3, claimed_until = NULL WHERE ${t.key} = $1::${t.keyType} AND claimed_by = $2`,
    [key, owner, error.slice(0, 2000)],
  );
}

/** An event nobody can handle (an unknown type): parked with the reason, for an operator; never dropped. */
export async function parkLeased(
  db: Executor,
  t: LeaseTable,
  key: string,
  owner: string,
  error: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE ${t.table} SET dead_at = $4, last_error = $3, claimed_until = NULL WHERE ${t.key} = $1::${t.keyType} AND claimed_by = $2`,
    [key, owner, error.slice(0, 2000), now],
  );
}

/** Rows handed back for another delivery: recovery re-sends a request whose answer never came. */
export async function requeueLeased(db: Executor, t: LeaseTable, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const result = await db.query(
    `UPDATE ${t.table} SET published_at = NULL, claimed_until = NULL WHERE ${t.key} = ANY($1::${t.keyType}[]) AND dead_at IS NULL`,
    [keys],
  );
  return result.rowCount ?? 0;
}

/** A row nobody could handle (parked, or dead after its retries), as an operator's list shows it. */
export interface ParkedRow {
  side: string;
  key: string;
  order_id: string;
  event_type: string;
  error: string | null;
  at: Date;
}
