import { EXISTING_KEYS } from '../create/batch.fast.repo.ts';
import { lineColumns } from '../orders.lines.ts';
import type { Executor } from '../../platform/db.ts';
import { mutant } from '../../platform/mutations.ts';
import type { PendingOutcome } from './pending.ts';

// The statements of the group commit of queued creates (orders/queued/pending.batch.ts). The rows are the
// ones createPendingOrder and the key's claim and completion write, for a whole group at once.

const OPERATION = 'create_order';

/** One member of a group, everything chosen before the statement (ids, its 202, its stock request). */
export interface QueuedRow extends PendingOutcome {
  userId: string;
  key: string;
  digest: string;
  body: string;
  location: string;
  payload: string;
  requestKey: string;
  /** The member's arrival: its order's, log's and stock request's time (the relay's order). */
  at: Date;
}

/** A key that existed before the statement: nothing of its member was written. */
export interface ExistingKey {
  user_id: string;
  key: string;
  state: 'PROCESSING' | 'DONE';
  digest: string;
  status: number | null;
  body: string | null;
  location: string | null;
}

/** What a queued order snapshots of a SKU: its lines' name and unit price. */
export interface SkuTerm {
  name: string;
  price: number;
}

/** Name and price of each SKU of the tenant that exists (absent: no such SKU). */
export async function readSkuTerms(
  db: Executor,
  tenantId: string,
  skus: readonly string[],
): Promise<Map<string, SkuTerm>> {
  const result = await db.query<{ sku: string; name: string; price: number }>({
    name: 'queued-group-skus',
    text: `SELECT k.sku, k.name, k.price FROM unnest($2::text[]) AS u(sku)
           CROSS JOIN LATERAL (SELECT sku, name, price FROM skus WHERE tenant_id = $1 AND sku = u.sku) AS k`,
    values: [tenantId, skus],
  });
  return new Map(result.rows.map((r) => [r.sku, { name: r.name, price: r.price }]));
}

// One autocommit statement: one round trip, one durable commit for the group. `stale` checks the
// names and prices the members' rows and 202s were built from (the caller's cache) against the SKU
// rows in the statement's snapshot, as a read of them just before would: if one differs or its SKU
// is gone, nothing is written and the statement says so (the caller reads them afresh and tries
// again). `ex` probes each member's key by primary key (LATERAL, as the sync fast batch); members
// whose key exists write nothing. The keys are a plain INSERT: a twin claimed in another process
// meanwhile fails the statement as a whole (the caller then runs every member alone). lock_timeout
// bounds a wait on a twin's uncommitted key.
const STATEMENT = `WITH cfg AS (SELECT set_config('lock_timeout', $2, true) AS v),
     stale AS (
       SELECT count(*)::int AS n FROM unnest($23::text[], $24::text[], $25::bigint[]) AS g(sku, name, price)
       WHERE NOT EXISTS (SELECT 1 FROM skus s WHERE s.tenant_id = $1 AND s.sku = g.sku AND s.name = g.name AND s.price = g.price)),
     u AS (
       SELECT u.* FROM cfg, stale, unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::bigint[],
                                   $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::timestamptz[])
         AS u(user_id, key, digest, order_id, sku, quantity, amount, reservation_key, body, location, request_key, payload, at)
       WHERE cfg.v IS NOT NULL AND stale.n = 0),
     ${EXISTING_KEYS}
     c AS (SELECT u.* FROM u WHERE NOT EXISTS (SELECT 1 FROM ex WHERE ex.user_id = u.user_id AND ex.key = u.key)),
     k AS (
       INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state,
                                     response_status, response_body, response_location, created_at, completed_at)
       SELECT $1, c.user_id, '${OPERATION}', c.key, c.digest, 'DONE', 202, c.body, c.location, c.at, c.at FROM c
       RETURNING 1),
     o AS (
       INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, queued, created_at, updated_at)
       SELECT c.order_id, $1, c.user_id, c.sku, c.quantity, c.amount, 'PENDING', 1, c.reservation_key, true, c.at, c.at FROM c
       RETURNING order_id),
     t AS (
       INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at)
       SELECT c.order_id, NULL, 'PENDING', 1, 'create (queued)', c.at FROM c JOIN o ON o.order_id = c.order_id
       RETURNING 1),
     l AS (
       INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount, reservation_key)
       SELECT l.order_id, l.line_no, $1, l.sku, l.name, l.unit_price, l.quantity, l.unit_price * l.quantity,
              CASE WHEN l.line_no = 1 THEN NULL ELSE l.reservation_key END
       FROM unnest($16::text[], $17::int[], $18::text[], $19::text[], $20::bigint[], $21::int[], $22::text[])
         AS l(order_id, line_no, sku, name, unit_price, quantity, reservation_key)
       JOIN o ON o.order_id = l.order_id
       RETURNING 1),
     r AS (
       INSERT INTO stock_requests_out (request_key, order_id, event_type, payload, created_at)
       SELECT c.request_key, c.order_id, 'STOCK_DEDUCTION_REQUESTED', c.payload::jsonb, c.at FROM c JOIN o ON o.order_id = c.order_id
       RETURNING 1)
     SELECT (SELECT count(*) FROM k)::int AS keys, (SELECT count(*) FROM t)::int AS logs,
            (SELECT count(*) FROM l)::int AS lines, (SELECT count(*) FROM r)::int AS requests,
            (SELECT json_agg(ex) FROM ex) AS existing, (SELECT n FROM stale) AS stale`;

/**
 * Writes the group; returns the keys that existed (their members wrote nothing), or 'stale' when a
 * SKU's name or price is no longer the one its lines carry (nothing was written). Throws: nothing
 * written.
 */
export async function writeQueuedGroup(
  db: Executor,
  tenantId: string,
  rows: readonly QueuedRow[],
  lockTimeoutMs: number,
): Promise<ExistingKey[] | 'stale'> {
  const lines = rows.flatMap((r) => r.lines.map((l) => ({ orderId: r.order.orderId, ...l })));
  // Each SKU's name and price as the lines (and the 202s) carry them: one pair per SKU.
  // Tests only (`orders.queued.stale-terms`): no remembered term is checked against its row.
  const used = mutant('orders.queued.stale-terms')
    ? []
    : [...new Map(lines.map((l) => [`${l.sku}\n${l.name}\n${l.unitPrice}`, l])).values()];
  const result = await db.query<{ existing: ExistingKey[] | null; stale: number }>({
    name: 'queued-group-write',
    text: STATEMENT,
    values: [
      tenantId,
      `${Math.trunc(lockTimeoutMs)}ms`,
      rows.map((r) => r.userId),
      rows.map((r) => r.key),
      rows.map((r) => r.digest),
      rows.map((r) => r.order.orderId),
      rows.map((r) => r.order.sku),
      rows.map((r) => r.order.quantity),
      rows.map((r) => r.order.amount),
      rows.map((r) => r.order.reservationKey),
      rows.map((r) => r.body),
      rows.map((r) => r.location),
      rows.map((r) => r.requestKey),
      rows.map((r) => r.payload),
      rows.map((r) => r.at),
      lines.map((l) => l.orderId),
      ...lineColumns(lines),
      used.map((l) => l.sku),
      used.map((l) => l.name),
      used.map((l) => l.unitPrice),
    ],
  });
  const row = result.rows[0];
  if ((row?.stale ?? 0) > 0) return 'stale';
  return row?.existing ?? [];
}
