import type { Tx } from '../../platform/db.ts';

// The statements of the group commit per SKU (orders/create/batch.ts). They write the rows of three
// domains (keys, stock, orders) in one statement each, on purpose: on a hot SKU every round trip
// inside the SKU's row lock is paid once per batch, and the batch is the unit of the hot path. The
// rows are exactly the ones the one-buyer path writes (inventory.repo, orders.repo, idempotency.repo).

export const OPERATION = 'create_order';

/** One buyer's key in a batch; `id` is `user\nkey` (both are visible ASCII, never a newline). */
export interface BatchKey {
  userId: string;
  key: string;
  digest: string;
}

export const batchKeyId = (userId: string, key: string) => `${userId}\n${key}`;

export interface BatchSku {
  name: string;
  price: number;
  available: number;
  perUserLimit: number | null;
  holdTtlMs: number;
}

interface SkuRow {
  name: string | null;
  price: number | null;
  available: number | null;
  per_user_limit: number | null;
  hold_ttl_ms: number | null;
}

function toSku(row: SkuRow | undefined): BatchSku | undefined {
  if (!row || row.name === null) return undefined;
  return {
    name: row.name,
    price: Number(row.price),
    available: Number(row.available),
    perUserLimit: row.per_user_limit,
    holdTtlMs: Number(row.hold_ttl_ms),
  };
}

// The keys of the statement's buyers ($1 tenant, $3 users, $4 keys) that were DONE before it began.
// LATERAL: one primary-key probe per buyer. A plain join let the planner (statistics taken while the
// table was small, a generic plan) hash the tenant's every key: 12 ms per batch at 11,500 keys, growing.
export const DONE_KEYS = `done AS (
       SELECT i.user_id, i.idempotency_key AS key, i.request_digest AS digest, i.response_status AS status,
              i.response_body AS body, i.response_location AS location
       FROM unnest($3::text[], $4::text[]) AS u(user_id, key)
       CROSS JOIN LATERAL (
         SELECT * FROM idempotency_keys i
         WHERE i.tenant_id = $1 AND i.user_id = u.user_id AND i.operation = '${OPERATION}' AND i.idempotency_key = u.key
           AND i.state = 'DONE' OFFSET 0) AS i)`;

// The batch's own PROCESSING keys with their answers ($1 tenant), each row found by its primary key
// (LATERAL: one probe per buyer) and then updated by its ctid. A join on the key columns let the
// planner, on statistics that say few keys are PROCESSING, scan every key of the tenant to find
// them (30,000 index entries per batch: PLAN-01). The rows are ours (claimed in this transaction),
// so no other transaction can move them between the probe and the update.
const ownedKeys = (columns: string) => `(
         SELECT d.*, p.at FROM unnest(${columns}) AS d(user_id, key, status, body, location)
         CROSS JOIN LATERAL (
           SELECT p.ctid AS at FROM idempotency_keys p
           WHERE p.tenant_id = $1 AND p.user_id = d.user_id AND p.operation = '${OPERATION}' AND p.idempotency_key = d.key
           OFFSET 0) AS p) AS d`;

export interface DoneRow {
  user_id: string;
  key: string;
  digest: string;
  status: number;
  body: string;
  location: string | null;
}

/** A key completed before this batch's statement: its stored answer, for a replay without a transaction of its own. */
export interface DoneKey {
  digest: string;
  response: { status: number; body: string; location?: string };
}

export function doneKeys(rows: DoneRow[] | null | undefined): Map<string, DoneKey> {
  return new Map((rows ?? []).map((d) => [batchKeyId(d.user_id, d.key), toDoneKey(d)]));
}

function toDoneKey(row: DoneRow): DoneKey {
  return {
    digest: row.digest,
    response: { status: row.status, body: row.body, ...(row.location ? { location: row.location } : {}) },
  };
}

/**
 * Claims every buyer's key (PROCESSING, as tryInsertKey) and reads the SKU, in one statement and
 * without its row lock. A key that exists (a replay, or another process's request in flight: the
 * insert waits on it, bounded by lock_timeout) is not ours and is answered after the batch; one
 * that was DONE before the statement comes back with its stored answer (`done`) for the replay.
 */
export async function claimKeysAndReadSku(
  tx: Tx,
  tenantId: string,
  sku: string,
  keys: readonly BatchKey[],
  now: Date,
  lockedUntil: Date,
): Promise<{ owned: Set<string>; sku: BatchSku | undefined; done: Map<string, DoneKey> }> {
  const result = await tx.query<SkuRow & { owned: string[]; done: DoneRow[] | null }>({
    name: 'batch-claim-keys-read-sku',
    text: `WITH k AS (
       INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, locked_until, created_at)
       SELECT $1, u.user_id, '${OPERATION}', u.key, u.digest, 'PROCESSING', $6, $7
       FROM unnest($3::text[], $4::text[], $5::text[]) AS u(user_id, key, digest)
       ON CONFLICT DO NOTHING RETURNING user_id, idempotency_key),
     ${DONE_KEYS}
     SELECT s.name, s.price, s.available, s.per_user_limit, s.hold_ttl_ms,
            coalesce((SELECT array_agg(k.user_id || E'\\n' || k.idempotency_key) FROM k), '{}') AS owned,
            (SELECT json_agg(done) FROM done) AS done
     FROM (SELECT 1) AS one LEFT JOIN skus s ON s.tenant_id = $1 AND s.sku = $2`,
    values: [
      tenantId,
      sku,
      keys.map((k) => k.userId),
      keys.map((k) => k.key),
      keys.map((k) => k.digest),
      lockedUntil,
      now,
    ],
  });
  const row = result.rows[0];
  return { owned: new Set(row?.owned ?? []), sku: toSku(row), done: doneKeys(row?.done) };
}

/** The SKU row locked (lock order 3): the pessimistic pass, after an optimistic one lost a race. */
export async function lockSkuForBatch(tx: Tx, tenantId: string, sku: string): Promise<BatchSku | undefined> {
  const result = await tx.query<SkuRow>({
    name: 'batch-lock-sku',
    text: 'SELECT name, price, available, per_user_limit, hold_ttl_ms FROM skus WHERE tenant_id = $1 AND sku = $2 FOR UPDATE',
    values: [tenantId, sku],
  });
  return toSku(result.rows[0]);
}

/** The buyers' holding rows, locked; only while the SKU row is locked (lock order 4). */
export async function lockHoldings(
  tx: Tx,
  tenantId: string,
  sku: string,
  userIds: readonly string[],
): Promise<Map<string, number>> {
  const result = await tx.query<{ user_id: string; quantity: number }>({
    name: 'batch-lock-holdings',
    text: 'SELECT user_id, quantity FROM user_holdings WHERE tenant_id = $1 AND sku = $2 AND user_id = ANY($3::text[]) FOR UPDATE',
    values: [tenantId, sku, userIds],
  });
  return new Map(result.rows.map((r) => [r.user_id, r.quantity]));
}

export interface BatchGrant {
  orderId: string;
  reservationKey: string;
  userId: string;
  quantity: number;
  amount: number;
  expiresAt: Date;
}

export interface BatchAnswer {
  userId: string;
  key: string;
  status: number;
  body: string;
  location: string | null;
}

export interface BatchWrite {
  tenantId: string;
  sku: string;
  name: string;
  price: number;
  grants: readonly BatchGrant[];
  /** Units per user to add to user_holdings (SKUs with a per-user limit only). */
  holdings: ReadonlyMap<string, number>;
  answers: readonly BatchAnswer[];
  now: Date;
}

/**
 * The whole batch in one statement: the conditional decrement of the SKU for every unit granted
 * (`available >= total`: it cannot oversell, whatever was read before), then — only if it took
 * the units — the holdings, reservations, orders, their first log rows, the lines, and every
 * owned key completed with its answer. The decrement is the statement's first row lock on the
 * SKU in an optimistic pass, so the lock is held for this statement and the COMMIT only.
 * Returns undefined when the decrement found too few units: nothing was written.
 */
export async function tryApplyBatch(tx: Tx, write: BatchWrite): Promise<{ available: number } | undefined> {
  const units = write.grants.reduce((sum, g) => sum + g.quantity, 0);
  const result = await tx.query<{ available: number | null; completed: number }>({
    text: `WITH taken AS (
       UPDATE skus SET available = available - $3, held = held + $3
       WHERE tenant_id = $1 AND sku = $2 AND available >= $3 RETURNING available),
     g AS (
       SELECT g.* FROM unnest($4::text[], $5::text[], $6::text[], $7::int[], $8::bigint[], $9::timestamptz[])
         AS g(order_id, reservation_key, user_id, quantity, amount, expires_at)
       WHERE EXISTS (SELECT 1 FROM taken)),
     h AS (
       INSERT INTO user_holdings (tenant_id, sku, user_id, quantity)
       SELECT $1, $2, u.user_id, u.quantity FROM unnest($10::text[], $11::int[]) AS u(user_id, quantity)
       WHERE EXISTS (SELECT 1 FROM taken)
       ON CONFLICT (tenant_id, sku, user_id) DO UPDATE SET quantity = user_holdings.quantity + EXCLUDED.quantity),
     r AS (
       INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
       SELECT $1, g.reservation_key, g.user_id, $2, g.quantity, 'HELD', g.expires_at, $12, $12 FROM g),
     o AS (
       INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
       SELECT g.order_id, $1, g.user_id, $2, g.quantity, g.amount, 'CREATED', 1, g.reservation_key, $12, $12 FROM g
       RETURNING order_id),
     t AS (
       INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at)
       SELECT o.order_id, NULL, 'CREATED', 1, 'create', $12 FROM o),
     l AS (
       INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount, reservation_key)
       SELECT g.order_id, 1, $1, $2, $13, $14, g.quantity, g.amount, NULL FROM g),
     k AS (
       UPDATE idempotency_keys i SET state = 'DONE', response_status = d.status, response_body = d.body,
         response_location = d.location, completed_at = $12, locked_until = NULL
       FROM ${ownedKeys('$15::text[], $16::text[], $17::int[], $18::text[], $19::text[]')}
       WHERE EXISTS (SELECT 1 FROM taken) AND i.ctid = d.at AND i.state = 'PROCESSING'
       RETURNING 1)
     SELECT (SELECT available FROM taken) AS available, (SELECT count(*) FROM k)::int AS completed`,
    values: [
      write.tenantId,
      write.sku,
      units,
      write.grants.map((g) => g.orderId),
      write.grants.map((g) => g.reservationKey),
      write.grants.map((g) => g.userId),
      write.grants.map((g) => g.quantity),
      write.grants.map((g) => g.amount),
      write.grants.map((g) => g.expiresAt),
      [...write.holdings.keys()],
      [...write.holdings.values()],
      write.now,
      write.name,
      write.price,
      ...answerColumns(write.answers),
    ],
  });
  const row = result.rows[0];
  if (!row || row.available === null) return undefined;
  if (row.completed !== write.answers.length) throw new Error('batch: an owned key was not PROCESSING');
  return { available: row.available };
}

function answerColumns(answers: readonly BatchAnswer[]) {
  return [
    answers.map((a) => a.userId),
    answers.map((a) => a.key),
    answers.map((a) => a.status),
    answers.map((a) => a.body),
    answers.map((a) => a.location),
  ];
}

/** A batch that took no stock (every buyer refused): only the keys are completed. */
export async function completeBatchKeys(tx: Tx, tenantId: string, answers: readonly BatchAnswer[], now: Date) {
  const result = await tx.query({
    text: `UPDATE idempotency_keys i SET state = 'DONE', response_status = d.status, response_body = d.body,
             response_location = d.location, completed_at = $2, locked_until = NULL
           FROM ${ownedKeys('$3::text[], $4::text[], $5::int[], $6::text[], $7::text[]')}
           WHERE i.ctid = d.at AND i.state = 'PROCESSING'`,
    values: [tenantId, now, ...answerColumns(answers)],
  });
  if (result.rowCount !== answers.length) throw new Error('batch: an owned key was not PROCESSING');
}
