import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, skuCounters, TENANT } from '../support/fixtures.ts';
import { flushStats, rowsRead } from '../support/pg-stats.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { createStockPump } from '../../src/orders/queued/pipeline.ts';
import { claimStockRequests, markStockRequestsSent, resendUnansweredRequests } from '../../src/orders/index.ts';
import { createPool } from '../../src/platform/db.ts';

// A stock request that was sent but never answered (the message was lost between the shop and the
// stock service) is sent again, same key, once `resendAfterMs` has passed. The pass that looks for
// such requests starts from the open orders: the requests table keeps the shop's whole history, and
// reading it on every pass grew with it.

const HISTORY = 3_000;
const RESEND_AFTER_MS = 60_000;

describe('queued orders: an unanswered stock request is sent again', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  const status = async (orderId: string) =>
    (await s.db.pool.query<{ status: string }>('SELECT status FROM orders WHERE order_id = $1', [orderId])).rows[0]
      ?.status;
  const pump = () =>
    createStockPump({
      shopDb: s.deps.db,
      stockDb: s.deps.db,
      clock: s.clock,
      leaseMs: s.deps.config.claimLeaseMs,
      resendAfterMs: RESEND_AFTER_MS,
    });
  const scanned = () => rowsRead(s.db.pool, ['stock_requests_out']);

  it('Q-09 a request lost after it was sent goes again after resendAfterMs, once; the shop history of answered requests is not read', async () => {
    await createSku(s, { sku: 'q9', stock: 5 });
    // The shop's history: answered requests of orders that are long CREATED.
    await s.db.pool.query(
      `WITH o AS (
         INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
         SELECT 'q9-old-' || i, $1, 'old' || (i % 100), 'q9', 1, 100, 'CREATED', 2, 'q9-old-' || i || '/r1', now(), now()
         FROM generate_series(1, $2::int) AS i RETURNING order_id)
       INSERT INTO stock_requests_out (request_key, order_id, event_type, payload, created_at, published_at)
       SELECT order_id || '/deduct', order_id, 'STOCK_DEDUCTION_REQUESTED', '{}', now(), now() - interval '1 day' FROM o`,
      [TENANT, HISTORY],
    );
    const buyer = await s.token(TENANT, 'q9-user');
    const placed = await s.call('POST', '/v1/orders', {
      token: buyer,
      body: { sku: 'q9' },
      headers: { 'idempotency-key': 'q9-key', prefer: 'respond-async' },
    });
    const orderId = placed.body.order_id as string;
    // Sent, and lost on the way: published, but the stock service never saw it.
    const lost = await claimStockRequests(s.deps.db, { owner: 'lost', now: s.clock.now(), leaseMs: 1_000, limit: 10 });
    expect(lost.map((r) => r.order_id)).toEqual([orderId]);
    await markStockRequestsSent(
      s.deps.db,
      lost.map((r) => r.key),
      'lost',
      s.clock.now(),
    );

    const before = await scanned();
    await pump().drain();
    expect(await status(orderId)).toBe('PENDING'); // sent less than resendAfterMs ago: not yet
    s.clock.advance(RESEND_AFTER_MS + 1);
    await pump().drain();
    expect(await status(orderId)).toBe('CREATED');
    await pump().drain();
    const read = (await scanned()) - before;

    expect(await countRows(s.db, 'stock_inbox', 'order_id = $1 AND deliveries = 1', [orderId])).toBe(1);
    expect(await skuCounters(s, 'q9')).toMatchObject({ available: 4, held: 1 });
    // Three passes over a history of 3,000 sent requests: a scan of it would read 3,000 a pass.
    expect(read).toBeLessThan(HISTORY);
  }, 60_000);

  it('Q-10 in a burst of 202s the pass reads none of the new orders: only those that entered their status before the cutoff', async () => {
    await createSku(s, { sku: 'q10', stock: 5 });
    // 2,000 orders just queued, their requests just sent: nothing to re-send yet.
    await s.db.pool.query(
      `WITH o AS (
         INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
         SELECT 'q10-' || i, $1, 'new' || (i % 100), 'q10', 1, 100, 'PENDING', 1, 'q10-' || i || '/r1', $2, $2
         FROM generate_series(1, 2000) AS i RETURNING order_id)
       INSERT INTO stock_requests_out (request_key, order_id, event_type, payload, created_at, published_at, claimed_by)
       SELECT order_id || '/deduct', order_id, 'STOCK_DEDUCTION_REQUESTED', '{}', $2, $2, 'elsewhere' FROM o`,
      [TENANT, s.clock.now()],
    );
    // The pass on a connection of its own, its counters flushed before they are read.
    const one = createPool(s.db.url, 1);
    try {
      const tables = ['orders', 'stock_requests_out'];
      await flushStats(one);
      const before = await rowsRead(s.db.pool, tables, true);
      expect(await resendUnansweredRequests(one, s.clock.now(), RESEND_AFTER_MS)).toBe(0);
      await flushStats(one);
      const read = (await rowsRead(s.db.pool, tables, true)) - before;
      // Without the cutoff on the orders' own index column, the pass read all 2,000.
      expect(read).toBeLessThan(500);
    } finally {
      await one.end();
    }
  }, 60_000);
});
