import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockReservationsOfOrders } from '../../src/stock/index.ts';
import { inTx } from '../../src/platform/db.ts';
import { buyBatched } from '../support/create-batch.ts';
import { createSku, TENANT } from '../support/fixtures.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { lockOnGrownTables, MAX_ROWS_READ } from './lock-plans.ts';

// A pay group's reservation lock (lockReservationsOfOrders) finds each row by its key on tables
// that grew after its first calls (tests/stock/lock-plans.ts), and holds the locks to the end
// of the transaction. CI runs LP-01 on the machine's older PostgreSQL as well (LP-01b, in
// tests/faults/db-restart-external.test.ts), where the statement before it read every row.

describe('locking the reservations of a pay group', () => {
  let base: Stack;
  beforeAll(async () => {
    base = await startStack();
  });
  afterAll(async () => base.close());

  it('LP-01 a call reads about one row per order and reservation, with 30,000 of each added after its first calls', async () => {
    const { read, group, locked } = await lockOnGrownTables(base);
    // One scan of any of the three tables would read 30,000.
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(MAX_ROWS_READ);
    // Every order's reservation, in (tenant, key) order: the lock order of stock/reservations/repo.ts.
    const keys = locked.map((r) => r.key);
    expect(keys).toHaveLength(group.length);
    expect([...keys].sort()).toEqual(keys);
    expect(new Set(locked.map((r) => r.status))).toEqual(new Set(['HELD']));
  }, 60_000);

  it('LP-02 the reservations stay locked until the transaction ends', async () => {
    await createSku(base, { sku: 'lp-held', stock: 1 });
    const orderId = JSON.parse((await buyBatched(base, TENANT, 'u-lp', 'lp-locked', 'lp-held')).body).order_id;
    const other = new pg.Client({ connectionString: base.db.url });
    await other.connect();
    const lockOther = (key: string) =>
      other.query(`SELECT 1 FROM reservations WHERE tenant_id = $1 AND request_key = $2 FOR UPDATE NOWAIT`, [
        TENANT,
        key,
      ]);
    try {
      const [reservation] = await inTx(base.deps.db, async (tx) => {
        const rows = await lockReservationsOfOrders(tx, [orderId]);
        await expect(lockOther(rows[0]!.key)).rejects.toMatchObject({ code: '55P03' });
        return rows;
      });
      expect(reservation?.status).toBe('HELD');
      expect((await lockOther(reservation!.key)).rowCount).toBe(1);
    } finally {
      await other.end();
    }
  });
});
