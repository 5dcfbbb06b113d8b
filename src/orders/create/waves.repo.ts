import { mutant } from '../../platform/mutations.ts';
import type { Executor } from '../../platform/db.ts';
import { DONE_KEYS, doneKeys, OPERATION, type BatchKey, type DoneKey, type DoneRow } from './batch.repo.ts';

// The sold-out wave's statement (orders/create/batch.ts): refusals stored as completed keys in one go.

/** The buyers (`user\nkey`) whose 409 this wave stored. */
export interface RefusedKeys {
  has(id: string): boolean;
}
const EVERYONE: RefusedKeys = { has: () => true };

/**
 * The sold-out fast path's one statement (autocommit, a durable commit): reads the SKU's committed
 * `available` and stores a completed 409 key for every buyer who wants more than that, in one go.
 * The read's snapshot is taken after every one of these buyers arrived, so no refusal is answered
 * for a moment at which the committed state had their units. No row lock is taken on the SKU.
 * A key that exists already is not written (it replays, or waits, on the one-buyer path).
 */
export async function tryRefuseSoldOut(
  db: Executor,
  tenantId: string,
  sku: string,
  buyers: readonly (BatchKey & { quantity: number })[],
  body: string,
  now: Date,
): Promise<{ available: number | undefined; refused: RefusedKeys; done: Map<string, DoneKey> }> {
  // Unnamed on purpose: planned with its parameters every time. As a named (prepared) statement,
  // PostgreSQL switched to a generic plan after five runs whose cost grew with the key table:
  // 30 ms per wave of 64 at 6,400 keys, 270 ms at 38,000 (PostgreSQL 15), against 1.5–4.4 ms flat
  // unnamed (planning ≈ 0.3 ms). That growth was most of P2's distance to the bare route.
  //
  // When every buyer's key was written (the usual wave: fresh keys), no key existed before the
  // statement, so `done` is empty and `refused` is everyone: neither list is built, sent or parsed
  // (the scalar subqueries under CASE are not run). `cardinality($3)` counts the buyers as sent;
  // a buyer twice in one wave would make `ins` smaller, and the lists are then built as before.
  const result = await db.query<{
    available: number | null;
    all_refused: boolean;
    refused: string[] | null;
    done: DoneRow[] | null;
  }>({
    text: `WITH s AS (SELECT available FROM skus WHERE tenant_id = $1 AND sku = $2),
     ins AS (
       INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state,
                                     response_status, response_body, created_at, completed_at)
       SELECT $1, u.user_id, '${OPERATION}', u.key, u.digest, 'DONE', 409, $7, $8, $8
       FROM unnest($3::text[], $4::text[], $5::text[], $6::int[]) AS u(user_id, key, digest, quantity), s
       WHERE ${mutant('orders.create.sold-out-read', sku) ? 'true' : 'u.quantity > s.available'}
       ON CONFLICT DO NOTHING RETURNING user_id, idempotency_key),
     ${DONE_KEYS}
     , n AS (SELECT count(*) AS inserted FROM ins)
     SELECT (SELECT available FROM s) AS available,
            (SELECT inserted FROM n) = cardinality($3::text[]) AS all_refused,
            CASE WHEN (SELECT inserted FROM n) = cardinality($3::text[]) THEN NULL
                 ELSE coalesce((SELECT array_agg(ins.user_id || E'\\n' || ins.idempotency_key) FROM ins), '{}') END
              AS refused,
            CASE WHEN (SELECT inserted FROM n) = cardinality($3::text[]) THEN NULL
                 ELSE (SELECT json_agg(done) FROM done) END AS done`,
    values: [
      tenantId,
      sku,
      buyers.map((b) => b.userId),
      buyers.map((b) => b.key),
      buyers.map((b) => b.digest),
      buyers.map((b) => b.quantity),
      body,
      now,
    ],
  });
  const row = result.rows[0];
  const refused: RefusedKeys = row?.all_refused ? EVERYONE : new Set(row?.refused ?? []);
  return { available: row?.available ?? undefined, refused, done: doneKeys(row?.done) };
}
