import pg from 'pg';
import { lockReservationsOfOrders } from '../../src/stock/index.ts';
import type { Reservation } from '../../src/stock/stock.types.ts';
import { inTx, type Db } from '../../src/platform/db.ts';
import { buyBatched } from '../support/create-batch.ts';
import { createSku, TENANT } from '../support/fixtures.ts';
import { flushStats, rowsRead } from '../support/pg-stats.ts';
import { startStack, type Stack } from '../support/stack.ts';

// LP-01's scenario, shared by the suite's PostgreSQL (tests/stock/lock-of-orders-plans.test.ts)
// and the machine's own, older one (tests/faults/db-restart-external.test.ts, before its restart).
//
// A pay group (applyOrderEvents) locks its orders' reservations with lockReservationsOfOrders. It
// must find each reservation by its key however the tables grew after the process started: a
// flash sale begins on young tables and writes thousands of rows a second. The statement before
// (named; the keys as two arrays, = ANY on each column of the primary key) was fine on
// PostgreSQL 18; on PostgreSQL 15 its cached plan read 91,230 rows for these 80 keys (every order,
// line and reservation, ten calls). Counted from PostgreSQL's own statistics.

export const CROWD = 30_000;
const SKU = 'lock-plans';
const TABLES = ['reservations', 'orders', 'order_lines'];

export interface LockPlansOutcome {
  /** Rows the ten calls read from orders, order_lines and reservations (seq and index). */
  read: number;
  group: string[];
  locked: Reservation[];
}

/** `n` orders of the crowd from `from` on: an order, its line and its reservation each, by SQL. */
async function crowd(db: Db, from: number, n: number): Promise<void> {
  const args = [TENANT, SKU, from, from + n - 1];
  await db.query(
    `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
     SELECT $1, 'lp-crowd-' || i || '/r1', 'crowd' || (i % 500), $2, 1, 'HELD', now() + interval '1 hour', now(), now()
     FROM generate_series($3::int, $4::int) AS i`,
    args,
  );
  await db.query(
    `INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
     SELECT 'lp-crowd-' || i, $1, 'crowd' || (i % 500), $2, 1, 100, 'CREATED', 1, 'lp-crowd-' || i || '/r1', now(), now()
     FROM generate_series($3::int, $4::int) AS i`,
    args,
  );
  await db.query(
    `INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount, reservation_key)
     SELECT 'lp-crowd-' || i, 1, $1, $2, 'x', 100, 1, 100, NULL FROM generate_series($3::int, $4::int) AS i`,
    args,
  );
}

/**
 * On `base`'s database: a few hundred orders (not analyzed yet, autovacuum off on these tables),
 * eight calls that let a named statement cache its plan, 30,000 more orders, then ten calls for
 * eight orders on ONE connection (the one whose plan was cached).
 */
export async function lockOnGrownTables(base: Stack): Promise<LockPlansOutcome> {
  const pool = new pg.Pool({ connectionString: base.db.url, max: 1 });
  const stack = await startStack({ db: { ...base.db, pool } });
  try {
    for (const table of ['reservations', 'orders', 'order_lines'])
      await base.db.pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    const orderOf = async (key: string) =>
      JSON.parse((await buyBatched(stack, TENANT, `u-${key}`, key, SKU)).body).order_id as string;
    const lock = (orderIds: string[]) => inTx(stack.deps.db, (tx) => lockReservationsOfOrders(tx, orderIds));

    await createSku(stack, { sku: SKU, stock: 100 });
    await crowd(base.db.pool, 1, 400);
    const early = await Promise.all(Array.from({ length: 4 }, (_, i) => orderOf(`lp-early-${i}`)));
    for (let i = 0; i < 8; i++) await lock(early);

    await crowd(base.db.pool, 401, CROWD);
    const late = await Promise.all(Array.from({ length: 6 }, (_, i) => orderOf(`lp-late-${i}`)));
    const group = [...late, 'lp-crowd-7', 'lp-crowd-29999'];
    const read = async () => {
      await flushStats(pool);
      return rowsRead(base.db.pool, TABLES, true);
    };
    const before = await read();
    let locked: Reservation[] = [];
    for (let i = 0; i < 10; i++) locked = await lock(group);
    return { read: (await read()) - before, group, locked };
  } finally {
    await stack.close();
    await pool.end();
  }
}

/** Eight orders, ten calls: each order, its line and its reservation probed once a call (about 240 rows). */
export const MAX_ROWS_READ = 2_000;
