import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/platform/migrate.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Migration 110 on existing data: a SKU row that counted held and confirmed apart now counts the
// units out, and the view sku_counters answers what the row said before.
let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase({ migrated: false });
});
afterAll(async () => db.drop());

it('CM-110 existing counters migrate: out = held + confirmed, the view derives the same held / confirmed', async () => {
  const all = await loadMigrations();
  await migrate(
    db.url,
    all.filter((m) => m.version < 110),
  );
  await db.pool.query(
    `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, confirmed, released, hold_ttl_ms, created_at)
     VALUES ('t', 'm1', 'M1', 100, 10, 5, 2, 3, 1, 60000, now())`,
  );
  await db.pool.query(
    `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
     SELECT 't', 'k' || i, 'u', 'm1', 1, CASE WHEN i <= 2 THEN 'HELD' WHEN i <= 5 THEN 'CONFIRMED' ELSE 'RELEASED' END, now(), now(), now()
     FROM generate_series(1, 6) AS i`,
  );
  expect(await migrate(db.url)).toEqual(all.filter((m) => m.version >= 110).map((m) => m.version));
  const row = await db.pool.query('SELECT available, held FROM skus WHERE sku = $1', ['m1']);
  expect(row.rows[0]).toEqual({ available: 5, held: 5 });
  const view = await db.pool.query(
    'SELECT total, available, held, confirmed, released FROM sku_counters WHERE sku = $1',
    ['m1'],
  );
  expect(view.rows[0]).toEqual({ total: 10, available: 5, held: 2, confirmed: 3, released: 1 });
  // The row's CHECK now says total = available + out.
  await expect(db.pool.query(`UPDATE skus SET held = held + 1 WHERE sku = 'm1'`)).rejects.toThrow(/skus_conserved/);
});
