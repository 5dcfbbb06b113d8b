import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimBatch, markPublishedBatch } from '../../src/outbox/outbox.repo.ts';
import { createPool } from '../../src/platform/db.ts';
import { flushStats, rowsRead } from '../support/pg-stats.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// The relay's claim takes the oldest due events, ORDER BY event_id LIMIT n, at most one per order.
// With the pending events indexed only by (next_attempt_at, event_id), it read every due event,
// probed each one's earlier versions, sorted them all and kept n (2.7 ms for 50 of 10,000 in the
// bench), or it walked the primary key through every event ever published (the outbox keeps them).
// Migration 150 indexes the pending events in event_id order: a claim reads its batch.

const HISTORY = 20_000; // published before
const BACKLOG = 5_000; // due now
const LATER = `oc-${String(HISTORY + 1).padStart(6, '0')}`;
const BACKING_OFF = `oc-${String(HISTORY + 2).padStart(6, '0')}`;

describe('the relay claim reads its batch, not the backlog', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
    await db.pool.query(`
      INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
      SELECT 'oc-' || lpad(i::text, 6, '0'), 't', 'u', 's', 1, 100, 'PAID', 3, 'oc-r' || i, now(), now() FROM generate_series(1, ${HISTORY + BACKLOG}) AS i`);
    // One event per order, in order-id order, the first HISTORY of them published long ago.
    await db.pool.query(`
      INSERT INTO outbox (order_id, event_type, order_version, payload, created_at, next_attempt_at, published_at)
      SELECT order_id, 'ORDER_PAID', 3, '{}', now(), now() - interval '1 second',
             CASE WHEN order_id <= 'oc-${String(HISTORY).padStart(6, '0')}' THEN now() - interval '1 day' END
      FROM orders ORDER BY order_id`);
    // The first due order has a later version too; the second due event backs off after a failure.
    await db.pool.query(`
      INSERT INTO outbox (order_id, event_type, order_version, payload, created_at, next_attempt_at)
      VALUES ('${LATER}', 'ORDER_REFUNDED', 4, '{}', now(), now() - interval '1 second')`);
    await db.pool.query(`UPDATE outbox SET next_attempt_at = now() + interval '1 hour', attempts = 1
                         WHERE order_id = '${BACKING_OFF}'`);
    await db.pool.query('ANALYZE outbox');
  }, 60_000);
  afterAll(async () => db.drop());

  const claimIds = (rows: { event_id: number }[]) => rows.map((r) => Number(r.event_id));

  it(`OC-01 with 20,000 events published and 5,000 due, a claim of 50 reads about 50, oldest first, skipping a backed-off event and a later version`, async () => {
    const one = createPool(db.url, 1);
    try {
      const ids = (
        await db.pool.query<{ id: string; order_id: string; v: number }>(
          'SELECT event_id::text AS id, order_id, order_version AS v FROM outbox WHERE published_at IS NULL ORDER BY event_id',
        )
      ).rows;
      const expected = ids
        .filter((r) => r.order_id !== BACKING_OFF && !(r.order_id === LATER && r.v === 4))
        .map((r) => Number(r.id));
      // The first call plans the statement and settles the statistics; the second is measured.
      const first = await claimBatch(one, { owner: 'oc', now: new Date(), leaseMs: 30_000, limit: 50 });
      expect(claimIds(first)).toEqual(expected.slice(0, 50));
      expect(await markPublishedBatch(one, claimIds(first), 'oc', new Date())).toBe(50);
      await flushStats(one);
      const before = await rowsRead(db.pool, ['outbox'], true);
      const second = await claimBatch(one, { owner: 'oc', now: new Date(), leaseMs: 30_000, limit: 50 });
      await flushStats(one);
      const read = (await rowsRead(db.pool, ['outbox'], true)) - before;
      expect(claimIds(second)).toEqual(expected.slice(50, 100));
      // In (next_attempt_at, event_id) order and sorted, the claim read every due event (5,000); in
      // primary-key order, every event published before (20,000).
      expect(read).toBeLessThan(1_000);
      const claimed = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM outbox WHERE claimed_by = 'oc' AND published_at IS NULL AND claimed_until > now()`,
      );
      expect(claimed.rows[0]?.n).toBe(50);
    } finally {
      await one.end();
    }
  }, 60_000);
});
