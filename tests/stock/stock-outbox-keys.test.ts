import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimStockResults, failStockResult, markStockResultsSent, parkStockResult } from '../../src/stock/index.ts';
import { createPool } from '../../src/platform/db.ts';
import { flushStats, rowsRead } from '../support/pg-stats.ts';
import { startStack, type Stack } from '../support/stack.ts';

// The stock service's result outbox keys its rows by a bigint. Its writes after a claim (mark, a
// failed delivery counted, a park) find the row by that key's index: compared as text, the column
// cast hid the index and every failed delivery read the whole outbox, which grows with every
// result ever sent, at the moment a broker was down and every delivery failed.

const HISTORY = 3_000;

describe('the stock result outbox: writes after a claim find their row by its key', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  it('LQ-01 a failed delivery, a park and a mark read their own rows only, with 3,000 results sent before', async () => {
    await s.db.pool.query(
      `INSERT INTO stock_outbox (request_key, order_id, event_type, payload, created_at, published_at)
       SELECT 'lq-old-' || i, 'lq-old-' || i, 'STOCK_RESERVED', '{}', now(), now() FROM generate_series(1, $1::int) AS i`,
      [HISTORY],
    );
    await s.db.pool.query(
      `INSERT INTO stock_outbox (request_key, order_id, event_type, payload, created_at)
       SELECT 'lq-new-' || i, 'lq-new-' || i, 'STOCK_RESERVED', '{}', now() FROM generate_series(1, 3) AS i`,
    );
    const one = createPool(s.db.url, 1);
    try {
      const claimed = await claimStockResults(one, { owner: 'lq', now: new Date(), leaseMs: 30_000, limit: 10 });
      expect(claimed).toHaveLength(3);
      const [failed, parked, sent] = claimed.map((r) => r.key);
      await flushStats(one);
      const before = await rowsRead(s.db.pool, ['stock_outbox']);
      await failStockResult(one, failed!, 'lq', 'broker down');
      await parkStockResult(one, parked!, 'lq', 'unknown type', new Date());
      expect(await markStockResultsSent(one, [sent!], 'lq', new Date())).toBe(1);
      await flushStats(one);
      // A scan of the outbox would read 3,003 rows for each of the three.
      expect((await rowsRead(s.db.pool, ['stock_outbox'])) - before).toBeLessThan(HISTORY);
      const rows = await s.db.pool.query<{
        key: string;
        attempts: number;
        dead: boolean;
        sent: boolean;
        leased: boolean;
      }>(
        `SELECT event_id::text AS key, attempts, dead_at IS NOT NULL AS dead, published_at IS NOT NULL AS sent,
                claimed_until IS NOT NULL AS leased
         FROM stock_outbox WHERE request_key LIKE 'lq-new-%' ORDER BY event_id`,
      );
      expect(rows.rows).toEqual([
        { key: failed, attempts: 1, dead: false, sent: false, leased: false },
        { key: parked, attempts: 0, dead: true, sent: false, leased: false },
        { key: sent, attempts: 0, dead: false, sent: true, leased: false },
      ]);
      // Fenced by the owner: another process's late write changes nothing.
      await failStockResult(one, failed!, 'someone-else', 'late');
      expect(
        (await s.db.pool.query('SELECT attempts FROM stock_outbox WHERE event_id = $1::bigint', [failed])).rows[0],
      ).toEqual({ attempts: 1 });
    } finally {
      await one.end();
    }
  });
});
