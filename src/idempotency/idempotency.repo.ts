import { sendWithCommit, type Executor, type Tx } from '../platform/db.ts';
import { mutant } from '../platform/mutations.ts';

export interface KeyScope {
  tenantId: string;
  userId: string;
  operation: string;
  key: string;
}

export interface StoredResponse {
  status: number;
  /** The exact bytes sent the first time, so a replay is byte for byte. */
  body: string;
  location?: string;
}

export interface KeyRecord {
  digest: string;
  state: 'PROCESSING' | 'DONE';
  response?: StoredResponse;
  lockedUntil: Date | null;
}

const SCOPE = 'tenant_id = $1 AND user_id = $2 AND operation = $3 AND idempotency_key = $4';
const scopeParams = (s: KeyScope) => [s.tenantId, s.userId, s.operation, s.key];

/**
 * Claims the key for this request. The unique primary key decides between concurrent requests:
 * a second INSERT waits on the first's uncommitted row (bounded by lock_timeout) and then either
 * inserts (the first rolled back) or does nothing (it committed). True means we own the key.
 */
export async function tryInsertKey(
  tx: Tx,
  scope: KeyScope,
  digest: string,
  now: Date,
  lockedUntil: Date,
): Promise<boolean> {
  // Named statements are prepared once per connection: these run on every keyed request.
  const result = await tx.query({
    name: 'idempotency-insert',
    text: `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, locked_until, created_at)
           VALUES ($1, $2, $3, $4, $5, 'PROCESSING', $6, $7) ON CONFLICT DO NOTHING`,
    values: [...scopeParams(scope), digest, lockedUntil, now],
  });
  return result.rowCount === 1 || mutant('idempotency.key.unique', scope.key); // tests only: the conflict ignored
}

export async function findKey(db: Executor, scope: KeyScope): Promise<KeyRecord | undefined> {
  // Named: the first statement of every final-only claim (idempotency.once.ts).
  const result = await db.query<{
    request_digest: string;
    state: 'PROCESSING' | 'DONE';
    response_status: number | null;
    response_body: string | null;
    response_location: string | null;
    locked_until: Date | null;
  }>({
    name: 'idempotency-find',
    text: `SELECT request_digest, state, response_status, response_body, response_location, locked_until FROM idempotency_keys WHERE ${SCOPE}`,
    values: scopeParams(scope),
  });
  const row = result.rows[0];
  if (!row) return undefined;
  const response =
    row.response_status === null
      ? undefined
      : {
          status: row.response_status,
          body: row.response_body ?? '',
          ...(row.response_location ? { location: row.response_location } : {}),
        };
  return { digest: row.request_digest, state: row.state, response, lockedUntil: row.locked_until };
}

/** PROCESSING → DONE with the response, in the transaction of the effect it describes. */
export async function completeKey(tx: Tx, scope: KeyScope, response: StoredResponse, now: Date): Promise<void> {
  const result = await tx.query({
    name: 'idempotency-complete',
    text: `UPDATE idempotency_keys SET state = 'DONE', response_status = $5, response_body = $6, response_location = $7, completed_at = $8, locked_until = NULL
           WHERE ${SCOPE} AND state = 'PROCESSING'`,
    values: [...scopeParams(scope), response.status, response.body, response.location ?? null, now],
  });
  if (result.rowCount !== 1)
    throw new Error(`idempotency key ${scope.operation}/${scope.key} was not PROCESSING when completed`);
}

/**
 * completeKey for a pipelined transaction: sent with its COMMIT (sendWithCommit), so the check is in
 * SQL. `1 / count(*)` fails the statement (division by zero) when no PROCESSING row was completed,
 * which turns the COMMIT already on the wire into a rollback of the whole effect. (A constant
 * raising expression would not do: PostgreSQL may evaluate it while planning.)
 */
export function completeKeyWithCommit(tx: Tx, scope: KeyScope, response: StoredResponse, now: Date): void {
  sendWithCommit(tx, {
    name: 'idempotency-complete-guarded',
    text: `WITH done AS (
             UPDATE idempotency_keys SET state = 'DONE', response_status = $5, response_body = $6, response_location = $7, completed_at = $8, locked_until = NULL
             WHERE ${SCOPE} AND state = 'PROCESSING' RETURNING 1)
           SELECT 1 / count(*) AS completed FROM done`,
    values: [...scopeParams(scope), response.status, response.body, response.location ?? null, now],
  });
}

/**
 * completeKeyWithCommit for many keys of one transaction (a group of claims whose answers are
 * final), in one statement: `1 / (count(*) = n)::int` fails it, and so the COMMIT, unless every
 * key was PROCESSING and is now DONE.
 */
export function completeKeysWithCommit(
  tx: Tx,
  done: ReadonlyArray<{ scope: KeyScope; response: StoredResponse }>,
  now: Date,
): void {
  if (done.length === 0) return;
  const column = <T>(pick: (d: { scope: KeyScope; response: StoredResponse }) => T) => done.map(pick);
  sendWithCommit(tx, {
    name: 'idempotency-complete-many-guarded',
    text: `WITH c AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[])
                   AS c(t, u, o, key, status, body, location)),
           done AS (
             UPDATE idempotency_keys k SET state = 'DONE', response_status = c.status, response_body = c.body,
                    response_location = c.location, completed_at = $8, locked_until = NULL
             FROM c WHERE k.tenant_id = c.t AND k.user_id = c.u AND k.operation = c.o AND k.idempotency_key = c.key
               AND k.state = 'PROCESSING' RETURNING 1)
           SELECT 1 / (count(*) = $9)::int AS completed FROM done`,
    values: [
      column((d) => d.scope.tenantId),
      column((d) => d.scope.userId),
      column((d) => d.scope.operation),
      column((d) => d.scope.key),
      column((d) => d.response.status),
      column((d) => d.response.body),
      column((d) => d.response.location ?? null),
      now,
      done.length,
    ],
  });
}

/**
 * The key of a final-only operation, written once, DONE, with the COMMIT (sendWithCommit). A plain
 * INSERT: a row another request committed meanwhile fails it on the primary key, and that turns
 * the COMMIT already on the wire into a rollback of the whole effect (idempotency.once.ts).
 */
export function insertDoneKeyWithCommit(
  tx: Tx,
  scope: KeyScope,
  digest: string,
  response: StoredResponse,
  now: Date,
): void {
  const unguarded = mutant('idempotency.key.unique', scope.key); // tests only: the primary key refuses nothing
  sendWithCommit(tx, {
    ...(unguarded ? {} : { name: 'idempotency-insert-done' }),
    text: `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state,
                                      response_status, response_body, response_location, created_at, completed_at)
           VALUES ($1, $2, $3, $4, $5, 'DONE', $6, $7, $8, $9, $9)${unguarded ? ' ON CONFLICT DO NOTHING' : ''}`,
    values: [...scopeParams(scope), digest, response.status, response.body, response.location ?? null, now],
  });
}

/** Takes over a PROCESSING key whose owner's lease ran out (its process died mid-way). */
export async function tryTakeOverKey(tx: Tx, scope: KeyScope, now: Date, lockedUntil: Date): Promise<boolean> {
  const result = await tx.query(
    `UPDATE idempotency_keys SET locked_until = $6 WHERE ${SCOPE} AND state = 'PROCESSING' AND locked_until < $5`,
    [...scopeParams(scope), now, lockedUntil],
  );
  return result.rowCount === 1;
}

// Bounded per statement so a purge never holds a long lock; the loop in purgeCompletedKeys keeps
// going batch after batch, so a flash sale writing 10k keys/s is purged as fast as it writes.
const PURGE_BATCH = 5_000;
// One pass stops after this long even if keys remain; the next pass continues.
const PURGE_PASS_BUDGET_MS = 20_000;

/** Deletes one batch of completed keys older than the retention; PROCESSING keys are never purged. */
export async function purgeCompletedKeysBatch(db: Executor, olderThan: Date, limit = PURGE_BATCH): Promise<number> {
  // ctid = ANY(ARRAY(…)) is a TID scan over the rows the partial index found: no table scan.
  const result = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM idempotency_keys WHERE state = 'DONE' AND completed_at < $1 ORDER BY completed_at LIMIT $2))
     AND state = 'DONE' AND completed_at < $1`,
    [olderThan, limit],
  );
  return result.rowCount ?? 0;
}

/** Purges completed keys past the retention, batch after batch, until none is left or the pass budget is spent. */
export async function purgeCompletedKeys(
  db: Executor,
  olderThan: Date,
  budgetMs = PURGE_PASS_BUDGET_MS,
): Promise<number> {
  const deadline = Date.now() + budgetMs;
  let total = 0;
  for (;;) {
    const deleted = await purgeCompletedKeysBatch(db, olderThan);
    total += deleted;
    if (deleted < PURGE_BATCH || Date.now() >= deadline) return total;
  }
}

/**
 * tryInsertKey for many requests in one statement (a group of claims sharing a transaction):
 * the indexes of the keys this statement inserted, i.e. the requests that own their key.
 */
export async function tryInsertKeys(
  tx: Tx,
  keys: ReadonlyArray<{ scope: KeyScope; digest: string }>,
  now: Date,
  lockedUntil: Date,
): Promise<Set<number>> {
  const column = (pick: (k: { scope: KeyScope; digest: string }) => string) => keys.map(pick);
  const result = await tx.query<{ i: number }>({
    name: 'idempotency-insert-many',
    text: `WITH k AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS k(t, u, o, key, d, i)),
           ins AS (INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, locked_until, created_at)
             SELECT t, u, o, key, d, 'PROCESSING', $6, $7 FROM k ORDER BY i ON CONFLICT DO NOTHING
             RETURNING tenant_id, user_id, operation, idempotency_key)
           SELECT (k.i - 1)::int AS i FROM k JOIN ins ON ins.tenant_id = k.t AND ins.user_id = k.u AND ins.operation = k.o AND ins.idempotency_key = k.key`,
    values: [
      column((k) => k.scope.tenantId),
      column((k) => k.scope.userId),
      column((k) => k.scope.operation),
      column((k) => k.scope.key),
      column((k) => k.digest),
      lockedUntil,
      now,
    ],
  });
  return new Set(result.rows.map((r) => r.i));
}
