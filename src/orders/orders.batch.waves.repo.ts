import type { Executor } from '../platform/db.ts';
import { DONE_KEYS, doneKeys, OPERATION, type BatchKey, type DoneKey, type DoneRow } from './orders.batch.repo.ts';

// The sold-out wave's statement (orders.batch.ts): refusals stored as completed keys in one go.

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
): Promise<{ available: number | undefined; refused: Set<string>; done: Map<string, DoneKey> }> {
  // Unnamed on purpose: planned with its parameters every time. As a named (prepared) statement,
  // PostgreSQL switched to a generic plan after five runs whose cost grew with the key table:
  // 30 ms per wave of 64 at 6,400 keys, 270 ms at 38,000 (PostgreSQL 15), against 1.5–4.4 ms flat
  // unnamed (planning ≈ 0.3 ms). That growth was most of P2's distance to the bare route.
  const result = await db.query<{ available: number | null; refused: string[]; done: DoneRow[] | null }>({
    text: `WITH s AS (SELECT available FROM skus WHERE tenant_id = $1 AND sku = $2),
     ins AS (
       INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state,
                                     response_status, response_body, created_at, completed_at)
       SELECT $1, u.user_id, '${OPERATION}', u.key, u.digest, 'DONE', 409, $7, $8, $8
       FROM unnest($3::text[], $4::text[], $5::text[], $6::int[]) AS u(user_id, key, digest, quantity), s
       WHERE u.quantity > s.available
       ON CONFLICT DO NOTHING RETURNING user_id, idempotency_key),
     ${DONE_KEYS}
     SELECT (SELECT available FROM s) AS available,
            coalesce((SELECT array_agg(ins.user_id || E'\\n' || ins.idempotency_key) FROM ins), '{}') AS refused,
            (SELECT json_agg(done) FROM done) AS done`,
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
  return { available: row?.available ?? undefined, refused: new Set(row?.refused ?? []), done: doneKeys(row?.done) };
}
