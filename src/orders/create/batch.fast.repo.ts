import type { Executor } from '../../platform/db.ts';
import { doneKeys, OPERATION, type DoneKey, type DoneRow } from './batch.repo.ts';

/**
 * `ex`: the batch's keys that exist already (any state), one primary-key probe per buyer of `u`
 * (columns user_id, key): flat in the key table's size, where a join planned once went to a scan of
 * the tenant's keys (docs/benchmarks/journal.md §3). Shared by the one-statement batch and the grouped 202s.
 */
export const EXISTING_KEYS = `ex AS (
       SELECT i.* FROM u CROSS JOIN LATERAL (
         SELECT i.user_id, i.idempotency_key AS key, i.state, i.request_digest AS digest, i.response_status AS status,
                i.response_body AS body, i.response_location AS location
         FROM idempotency_keys i
         WHERE i.tenant_id = $1 AND i.user_id = u.user_id AND i.operation = '${OPERATION}' AND i.idempotency_key = u.key
         OFFSET 0) AS i),`;

// The group commit's ONE-STATEMENT form (orders/create/batch.fast.ts): a batch of quantity-1 buyers of a
// SKU without a per-user limit, claimed, decided and written by one autocommit statement — one
// round trip and one durable commit; the SKU's row lock is taken last inside that statement. The
// rows are the ones the transactional batch writes (orders/create/batch.repo.ts tryApplyBatch), keys
// inserted DONE at once.

/** What the caller read and built the buyers' 201 bodies from; the statement checks it on the locked row. */
export interface SkuDefinition {
  name: string;
  price: number;
  holdTtlMs: number;
  perUserLimit: number | null;
}

/** One buyer: everything of a granted order is chosen before the statement (ids, Location). */
export interface FastBuyer {
  userId: string;
  key: string;
  digest: string;
  orderId: string;
  reservationKey: string;
  /** The stored Location if the statement grants this buyer a unit. */
  location: string;
}

export type FastOutcome =
  /** No SKU row: nothing written. */
  | { kind: 'missing' }
  /** The row, locked last, had fewer units than the plain read granted (or a new definition): nothing written. */
  | { kind: 'short' }
  /** The locked row's definition is not the one the bodies were built from: nothing written. */
  | { kind: 'stale'; definition: SkuDefinition }
  | {
      kind: 'applied';
      /** Units on sale when the row was locked (undefined: every key existed, the row was not locked);
       * the first `granted` new keys, in arrival order, got one. */
      availableBefore: number | undefined;
      granted: number;
      /** Units left on the row this statement updated (undefined: it updated none). */
      availableAfter: number | undefined;
      /** Keys that existed before the statement (a replay, or a request in flight elsewhere): not written. */
      existing: Set<string>;
      done: Map<string, DoneKey>;
    };

interface Row {
  found: boolean;
  candidates: number;
  same: boolean | null;
  available: number | null;
  name: string | null;
  price: number | null;
  hold_ttl_ms: number | null;
  per_user_limit: number | null;
  granted: number;
  after: number | null;
  existing: string[] | null;
  done: DoneRow[] | null;
}

// flashpay_batch_short's SQLSTATE (migration 135).
const SHORT = 'FPB01';

const STATEMENT = `WITH cfg AS (SELECT set_config('lock_timeout', $16, true) AS v),
     u AS (
       SELECT u.* FROM cfg, unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $10::text[])
         WITH ORDINALITY AS u(user_id, key, digest, order_id, reservation_key, location, ord)
       WHERE cfg.v IS NOT NULL),
     ${EXISTING_KEYS}
     cand AS (
       SELECT u.*, row_number() OVER (ORDER BY u.ord) AS rn FROM u
       WHERE NOT EXISTS (SELECT 1 FROM ex WHERE ex.user_id = u.user_id AND ex.key = u.key)),
     s AS (
       SELECT k.available, k.name, k.price, k.hold_ttl_ms, k.per_user_limit,
              (k.name = $11::text AND k.price = $12::bigint AND k.hold_ttl_ms = $13::bigint AND k.per_user_limit IS NULL) AS same
       FROM skus k WHERE k.tenant_id = $1 AND k.sku = $2 AND EXISTS (SELECT 1 FROM cand)),
     g AS (SELECT cand.* FROM cand, s WHERE s.same AND cand.rn <= s.available),
     n AS (SELECT count(*)::int AS n FROM g),
     r AS (
       INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
       SELECT $1, g.reservation_key, g.user_id, $2, 1, 'HELD', $8::timestamptz, $14, $14 FROM g
       RETURNING 1),
     o AS (
       INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
       SELECT g.order_id, $1, g.user_id, $2, 1, $12, 'CREATED', 1, g.reservation_key, $14, $14 FROM g
       RETURNING order_id),
     t AS (
       INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at)
       SELECT o.order_id, NULL, 'CREATED', 1, 'create', $14 FROM o
       RETURNING 1),
     l AS (
       INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount, reservation_key)
       SELECT g.order_id, 1, $1, $2, $11, $12, 1, $12, NULL FROM g
       RETURNING 1),
     k AS (
       INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state,
                                     response_status, response_body, response_location, created_at, completed_at)
       SELECT $1, c.user_id, '${OPERATION}', c.key, c.digest, 'DONE',
              CASE WHEN c.rn <= s.available THEN 201 ELSE 409 END,
              CASE WHEN c.rn <= s.available THEN array_to_string($9::text[], c.order_id) ELSE $15 END,
              CASE WHEN c.rn <= s.available THEN c.location END, $14, $14
       FROM cand c, s WHERE s.same
       RETURNING 1),
     w AS (SELECT (SELECT count(*) FROM r) + (SELECT count(*) FROM t) + (SELECT count(*) FROM l) + (SELECT count(*) FROM k) AS rows),
     taken AS (
       UPDATE skus SET available = available - n.n, held = held + n.n FROM n, w
       WHERE tenant_id = $1 AND sku = $2 AND n.n > 0 AND w.rows >= 0 AND available >= n.n
         AND name = $11::text AND price = $12::bigint AND hold_ttl_ms = $13::bigint AND per_user_limit IS NULL
       RETURNING available),
     checked AS (
       SELECT (SELECT available FROM taken) AS after,
              CASE WHEN n.n > 0 AND NOT EXISTS (SELECT 1 FROM taken) THEN flashpay_batch_short(n.n) END AS short
       FROM n)
     SELECT s.available IS NOT NULL AS found, (SELECT count(*) FROM cand)::int AS candidates, s.same, s.available, s.name, s.price, s.hold_ttl_ms, s.per_user_limit,
            (SELECT n FROM n) AS granted, checked.after, checked.short,
            (SELECT array_agg(ex.user_id || E'\\n' || ex.key) FROM ex) AS existing,
            (SELECT json_agg(ex) FROM ex WHERE ex.state = 'DONE') AS done
     FROM (SELECT 1) AS one LEFT JOIN s ON true, checked`;

/**
 * The whole batch in one statement, the SKU's row lock taken LAST ("update last"). Keys that exist
 * already are left alone (`ex`); the others (`cand`, in arrival order) are the batch's. The SKU row
 * is read WITHOUT a lock (`s`, the statement's snapshot); only if its definition is the one the
 * answers were built from, the first LEAST(available, candidates) candidates get a unit: their
 * reservation, order, log and line rows, and every candidate's key inserted DONE with its answer
 * (201, or the 409 SOLD_OUT past the units the read showed). A 201 body is the batch's one template
 * joined by the buyer's order id, in SQL (array_to_string) as in the caller (join): the same bytes,
 * and one body per batch on the wire instead of one per buyer. Only then (`taken` reads the counts
 * of every insert, so it runs after all of them) one decrement for the granted units, which takes
 * the row lock and re-checks on the newest row version that the units are still there and the
 * definition unchanged; if not, flashpay_batch_short raises FPB01 and nothing of the statement is
 * written ('short': the caller decides the batch again on the locked row). So the lock is held for
 * the decrement, the foreign-key checks and the commit only, and another process's batch inserts
 * while this one commits. The lock wait (and a wait on a key another transaction holds) is bounded by
 * lock_timeout, set for this statement's implicit transaction. The keys are a plain INSERT: if
 * another process claimed one of them meanwhile, the unique key fails the statement and nothing is
 * written (the caller sends every buyer down the one-buyer path).
 */
export async function tryFastBatch(
  db: Executor,
  input: {
    tenantId: string;
    sku: string;
    definition: SkuDefinition;
    buyers: readonly FastBuyer[];
    /** The hold's end, the same for every buyer of the batch. */
    expiresAt: Date;
    /** The 201 body split on its order id: a granted buyer's stored body is these joined by its order id. */
    createdParts: readonly string[];
    refusalBody: string;
    now: Date;
    lockTimeoutMs: number;
  },
): Promise<FastOutcome> {
  const { buyers, definition } = input;
  const query = db.query<Row>({
    name: 'batch-fast-last',
    text: STATEMENT,
    values: [
      input.tenantId,
      input.sku,
      buyers.map((b) => b.userId),
      buyers.map((b) => b.key),
      buyers.map((b) => b.digest),
      buyers.map((b) => b.orderId),
      buyers.map((b) => b.reservationKey),
      input.expiresAt,
      input.createdParts,
      buyers.map((b) => b.location),
      definition.name,
      definition.price,
      definition.holdTtlMs,
      input.now,
      input.refusalBody,
      `${Math.trunc(input.lockTimeoutMs)}ms`,
    ],
  });
  let result: Awaited<typeof query>;
  try {
    result = await query;
  } catch (error) {
    if ((error as { code?: string }).code === SHORT) return { kind: 'short' };
    throw error;
  }
  const row = result.rows[0];
  if (row && row.candidates === 0)
    // Replays (or keys in flight elsewhere) only: the SKU's row was not even locked.
    return {
      kind: 'applied',
      availableBefore: undefined,
      granted: 0,
      availableAfter: undefined,
      existing: new Set(row.existing ?? []),
      done: doneKeys(row.done),
    };
  if (!row?.found) return { kind: 'missing' };
  if (!row.same)
    return {
      kind: 'stale',
      definition: {
        name: row.name ?? '',
        price: Number(row.price),
        holdTtlMs: Number(row.hold_ttl_ms),
        perUserLimit: row.per_user_limit,
      },
    };
  return {
    kind: 'applied',
    availableBefore: Number(row.available),
    granted: row.granted,
    availableAfter: row.after ?? undefined,
    existing: new Set(row.existing ?? []),
    done: doneKeys(row.done),
  };
}
