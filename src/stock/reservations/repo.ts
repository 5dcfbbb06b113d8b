import type { Executor, Tx } from '../../platform/db.ts';
import type { Reservation, ReservationStatus, ReserveRequest, ReserveResult } from '../stock.types.ts';

/*
 * LOCK ORDER — every path that touches reservations, SKU counters and per-user holdings takes
 * row locks in this one order, so no two of them can wait on each other in a cycle (a deadlock
 * stalls the hot SKU for deadlock_timeout, 1 s, with its row held):
 *
 *   1. the order row, if any (pay, cancel, recovery: `lockOrder`);
 *   2. the reservation rows (a new one is invisible to others; the sweep claims with SKIP LOCKED);
 *   3. the SKU rows, several in (tenant_id, sku) order;
 *   4. a holding row (user_holdings) only while its SKU's row is already locked.
 *
 * A pay stops at 2: confirming changes the reservation row only (stock/reservations/finish.ts, migration
 * 110), so it never waits on a hot SKU's row behind the creates' batches. It reaches 3 only when
 * its hold was lost and it re-reserves (a late success), and then in the same order.
 *
 * Rule 4 is what makes holdings never contended: whoever locks a holding row already owns its
 * SKU row. Create therefore takes the stock first and the per-user limit second (and gives the
 * stock back on USER_LIMIT); cancel and decline (`tryRelease`) go reservation → SKU → holding; the
 * expiry sweep claims reservations, then locks their SKU rows in order, then the holdings.
 * The group commit of creates (src/orders/create/batch.ts) keeps the same order: its key rows
 * and new reservations lock nothing anyone else waits on, then the one SKU row (its batch
 * decrement, or FOR UPDATE when it decides on the locked row), then the holdings of its buyers.
 * tests/stock/lock-order.test.ts races all three on one hot SKU and counts deadlocks; the
 * create side of that race goes through the batcher.
 * A recovery group (`applyOrderEvents`, releaseMany in stock/reservations/finish.ts) keeps it too: its
 * orders, then their reservations, then its SKU rows locked by one SELECT … ORDER BY tenant_id,
 * sku FOR UPDATE when there are several, then the holdings. tests/recovery/recovery.test.ts RG-01
 * races such a group against creates on the same SKUs.
 */

interface ReservationRow {
  request_key: string;
  user_id: string;
  sku: string;
  quantity: number;
  status: ReservationStatus;
  expires_at: Date;
}

const toReservation = (tenantId: string, row: ReservationRow): Reservation => ({
  tenantId,
  key: row.request_key,
  userId: row.user_id,
  sku: row.sku,
  quantity: row.quantity,
  status: row.status,
  expiresAt: row.expires_at,
});

export async function findReservation(db: Executor, tenantId: string, key: string): Promise<Reservation | undefined> {
  const result = await db.query<ReservationRow>(
    'SELECT request_key, user_id, sku, quantity, status, expires_at FROM reservations WHERE tenant_id = $1 AND request_key = $2',
    [tenantId, key],
  );
  const row = result.rows[0];
  return row && toReservation(tenantId, row);
}

/**
 * The reservations behind one order, locked (`FOR UPDATE`) in key order. Taken after the order's
 * row lock and before any SKU row: the order's decision then reads a status nobody can change
 * under it (the expiry sweep skips locked rows), so a confirm or release it decides must succeed.
 */
export async function lockReservations(tx: Tx, tenantId: string, keys: readonly string[]): Promise<Reservation[]> {
  const result = await tx.query<ReservationRow>(
    'SELECT request_key, user_id, sku, quantity, status, expires_at FROM reservations WHERE tenant_id = $1 AND request_key = ANY($2::text[]) ORDER BY request_key FOR UPDATE',
    [tenantId, keys],
  );
  return result.rows.map((row) => toReservation(tenantId, row));
}

/**
 * lockReservations for the reservations that hold these orders' lines, every tenant at once, in
 * (tenant, key) order. The keys are read in SQL from where the orders module keeps them (line 1's
 * on the order row, the others on their line row) so that this lock can go out in the same write
 * as the orders' own (applyOrderEvents), before the keys are known in JS. The caller holds the
 * orders' row locks, so the keys it reads are the ones those orders have.
 */
export async function lockReservationsOfOrders(tx: Tx, orderIds: readonly string[]): Promise<Reservation[]> {
  const result = await tx.query<ReservationRow & { tenant_id: string }>({
    // Every row is found by its own key: each order and its lines by the order id, each reservation
    // by (tenant, key), a LATERAL probe per key, locked in (tenant, key) order as the outer rows
    // come. Unnamed: planned with each call's table sizes. The form before (named; the keys as two
    // InitPlan arrays, = ANY on each column) kept a generic plan made while the tables were young
    // (a sale's first seconds): a seq scan of every order, line and reservation. Planned afresh, it
    // still read every reservation of the tenant (the tenant column alone as the index condition)
    // and every line: 1.6–1.9 ms a call in P3, growing with the tables (docs/benchmarks/journal.md §15).
    text: `WITH ids AS (SELECT DISTINCT unnest($1::text[]) AS order_id),
     k AS MATERIALIZED (
       SELECT o.tenant_id, o.key FROM ids CROSS JOIN LATERAL (
         SELECT o.tenant_id, o.reservation_key AS key FROM orders o WHERE o.order_id = ids.order_id OFFSET 0) o
       UNION
       SELECT l.tenant_id, l.key FROM ids CROSS JOIN LATERAL (
         SELECT l.tenant_id, l.reservation_key AS key FROM order_lines l
         WHERE l.order_id = ids.order_id AND l.reservation_key IS NOT NULL OFFSET 0) l)
     SELECT r.tenant_id, r.request_key, r.user_id, r.sku, r.quantity, r.status, r.expires_at
     FROM (SELECT tenant_id, key FROM k WHERE key IS NOT NULL ORDER BY tenant_id, key) k
     CROSS JOIN LATERAL (
       SELECT r.tenant_id, r.request_key, r.user_id, r.sku, r.quantity, r.status, r.expires_at FROM reservations r
       WHERE r.tenant_id = k.tenant_id AND r.request_key = k.key FOR UPDATE) r
     ORDER BY k.tenant_id, k.key`,
    values: [orderIds],
  });
  return result.rows.map((row) => toReservation(row.tenant_id, row));
}

/**
 * Conditional decrement of the SKU counters and the HELD reservation row, in one statement: the
 * row lock taken by the UPDATE is what makes concurrent buyers queue on a hot SKU, and
 * `available >= $qty` is what makes overselling impossible. One statement keeps that lock's
 * critical section short. Returns the expiry when stock was taken.
 */
async function tryTakeAndHold(tx: Tx, request: ReserveRequest, now: Date): Promise<Date | undefined> {
  const result = await tx.query<{ expires_at: Date }>({
    name: 'reserve-take-and-hold',
    text: `WITH taken AS (
       UPDATE skus SET available = available - $5, held = held + $5
       WHERE tenant_id = $1 AND sku = $2 AND available >= $5 RETURNING hold_ttl_ms)
     INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
     SELECT $1, $3, $4, $2, $5, 'HELD', $6::timestamptz + make_interval(secs => taken.hold_ttl_ms / 1000.0), $6, $6 FROM taken
     RETURNING expires_at`,
    values: [request.tenantId, request.sku, request.key, request.userId, request.quantity, now],
  });
  return result.rows[0]?.expires_at;
}

/**
 * Takes stock for a SKU with a per-user limit: the SKU row's conditional decrement (lock order 3),
 * then the holding row's conditional upsert (4), then the HELD reservation. On the limit the stock
 * is given back in the same transaction, so USER_LIMIT moves no counter.
 */
async function tryTakeWithinLimit(
  tx: Tx,
  request: ReserveRequest,
  limit: number,
  now: Date,
): Promise<Date | 'SOLD_OUT' | 'USER_LIMIT'> {
  const taken = await tx.query<{ hold_ttl_ms: number }>({
    name: 'reserve-take-stock',
    text: `UPDATE skus SET available = available - $3, held = held + $3 WHERE tenant_id = $1 AND sku = $2 AND available >= $3 RETURNING hold_ttl_ms`,
    values: [request.tenantId, request.sku, request.quantity],
  });
  const ttlMs = taken.rows[0]?.hold_ttl_ms;
  if (ttlMs === undefined) return 'SOLD_OUT';
  if (!(await tryAddHolding(tx, request, limit))) {
    await tx.query({
      name: 'reserve-give-back-stock',
      text: `UPDATE skus SET available = available + $3, held = held - $3 WHERE tenant_id = $1 AND sku = $2`,
      values: [request.tenantId, request.sku, request.quantity],
    });
    return 'USER_LIMIT';
  }
  const held = await tx.query<{ expires_at: Date }>({
    name: 'reserve-insert-held',
    text: `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
           VALUES ($1, $3, $4, $2, $5, 'HELD', $6::timestamptz + make_interval(secs => $7::int / 1000.0), $6, $6) RETURNING expires_at`,
    values: [request.tenantId, request.sku, request.key, request.userId, request.quantity, now, ttlMs],
  });
  const expiresAt = held.rows[0]?.expires_at;
  if (!expiresAt) throw new Error('reservation insert returned nothing');
  return expiresAt;
}

/**
 * The per-user limit as a conditional upsert on the user's holding row, taken only while the
 * SKU's row is locked (lock order 4): the WHERE refuses the request that would cross the limit.
 */
async function tryAddHolding(tx: Tx, request: ReserveRequest, limit: number): Promise<boolean> {
  const result = await tx.query(
    `INSERT INTO user_holdings (tenant_id, sku, user_id, quantity) SELECT $1, $2, $3, $4::int WHERE $4::int <= $5::int
     ON CONFLICT (tenant_id, sku, user_id) DO UPDATE SET quantity = user_holdings.quantity + EXCLUDED.quantity
     WHERE user_holdings.quantity + EXCLUDED.quantity <= $5::int`,
    [request.tenantId, request.sku, request.userId, request.quantity, limit],
  );
  return result.rowCount === 1;
}

async function reserveOne(
  tx: Tx,
  request: ReserveRequest,
  limit: number | null,
  now: Date,
  freshKey: boolean,
): Promise<ReserveResult> {
  if (!freshKey) {
    const existing = await findReservation(tx, request.tenantId, request.key);
    if (existing)
      return { key: request.key, outcome: 'HELD', existingStatus: existing.status, expiresAt: existing.expiresAt };
  }
  const outcome =
    limit === null
      ? ((await tryTakeAndHold(tx, request, now)) ?? 'SOLD_OUT')
      : await tryTakeWithinLimit(tx, request, limit, now);
  if (outcome === 'SOLD_OUT' || outcome === 'USER_LIMIT') return { key: request.key, outcome };
  return { key: request.key, outcome: 'HELD', expiresAt: outcome };
}

/** The key of a SKU across tenants, for maps of per-SKU facts. */
export const skuKey = (tenantId: string, sku: string) => `${tenantId}\u0000${sku}`;

export interface ReserveOptions {
  /** Per-user limits the caller already read, by skuKey(); others are looked up. */
  limits?: ReadonlyMap<string, number | null>;
  /** The keys were minted just now (derived from a new order id): skip the replay lookup. */
  freshKeys?: boolean;
}

/**
 * Reserves for a batch of requests in the caller's transaction, in order. Idempotent by key: a
 * key seen before answers with its reservation instead of taking stock again. Taking a batch lets
 * a later single-writer-per-SKU path reserve for many queued buyers in one transaction.
 */
export async function reserve(
  tx: Tx,
  requests: readonly ReserveRequest[],
  now: Date,
  options: ReserveOptions = {},
): Promise<ReserveResult[]> {
  const limits = new Map<string, number | null>();
  const results: ReserveResult[] = new Array<ReserveResult>(requests.length);
  // SKU rows are locked in (tenant, sku) order (lock order 3); results keep the callers' order.
  const order = requests.map((_, i) => i).sort((a, b) => compareSkus(requests[a]!, requests[b]!));
  for (const index of order) {
    const request = requests[index]!;
    const key = skuKey(request.tenantId, request.sku);
    if (!limits.has(key)) {
      const known = options.limits?.get(key);
      if (known !== undefined) limits.set(key, known);
      else {
        const row = await tx.query<{ per_user_limit: number | null }>(
          'SELECT per_user_limit FROM skus WHERE tenant_id = $1 AND sku = $2',
          [request.tenantId, request.sku],
        );
        limits.set(key, row.rows[0]?.per_user_limit ?? null);
      }
    }
    results[index] = await reserveOne(tx, request, limits.get(key) ?? null, now, options.freshKeys === true);
  }
  return results;
}

function compareSkus(a: ReserveRequest, b: ReserveRequest): number {
  if (a.tenantId !== b.tenantId) return a.tenantId < b.tenantId ? -1 : 1;
  return a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0;
}
