import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, TENANT } from '../support/fixtures.ts';
import {
  countRows,
  startStack,
  TEST_EVENTS_SECRET,
  TEST_JWT_SECRET,
  TEST_NOTIFY_SECRET,
  type Stack,
} from '../support/stack.ts';
import { waitFor } from '../support/poll.ts';
import { spawnInventory, waitForExit } from '../support/process.ts';
import { stockPumpFor } from '../../src/orders/queued/pump.ts';

// MP-04: the stock service killed with kill -9 in the middle of a batch (every request of it
// written, nothing committed). Proves a batch is all or nothing: after the restart each request
// is applied exactly once, with one result each, and the sale comes out as if nothing happened.
describe('flashpay inventory killed -9 mid-batch', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ config: { stockService: 'external' } });
  });
  afterAll(async () => s.close());

  it('MP-04 a batch killed before its commit applies nothing; after the restart every request is applied once', async () => {
    await createSku(s, { sku: 'k9', stock: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const placed = await s.call('POST', '/v1/orders', {
        token: await s.token(TENANT, `k9-${i}`),
        body: { sku: 'k9' },
        headers: { 'idempotency-key': `k9-${i}`, prefer: 'respond-async' },
      });
      ids.push(placed.body.order_id as string);
    }
    await stockPumpFor(s.deps).drain(); // the shop's half: every request is in the stock service's inbox
    expect(await countRows(s.db, 'stock_inbox', 'applied_at IS NULL')).toBe(30);

    const env = {
      ...process.env,
      FLASHPAY_JWT_SECRET: TEST_JWT_SECRET,
      FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
      FLASHPAY_EVENTS_SECRET: TEST_EVENTS_SECRET,
      FLASHPAY_LOG_LEVEL: 'warn',
    };
    const doomed = await spawnInventory({ ...env, FLASHPAY_FAULTPOINT: 'stock.batch.before-commit' }, s.db.url);
    await waitFor(
      async () => doomed.stdout().includes('STAGE stock.batch.before-commit') || undefined,
      'the batch at its commit',
      60_000,
      20,
    );
    if (doomed.child.pid) process.kill(-doomed.child.pid, 'SIGKILL');
    await waitForExit(doomed.child);
    expect(await countRows(s.db, 'stock_inbox', 'applied_at IS NOT NULL')).toBe(0);
    expect(await countRows(s.db, 'stock_outbox')).toBe(0);
    expect(await countRows(s.db, 'reservations', "sku = 'k9'")).toBe(0);

    const restarted = await spawnInventory(env, s.db.url);
    try {
      await waitFor(
        async () => (await countRows(s.db, 'stock_inbox', 'applied_at IS NULL')) === 0 || undefined,
        'every request applied',
        60_000,
        50,
      );
    } finally {
      if (restarted.child.pid) process.kill(-restarted.child.pid, 'SIGTERM');
      await waitForExit(restarted.child);
    }
    await stockPumpFor(s.deps).drain();
    expect(await countRows(s.db, 'stock_outbox')).toBe(30);
    expect(await countRows(s.db, 'stock_results_in', "effect = 'APPLIED'")).toBe(30);
    const statuses = await s.db.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM orders WHERE order_id = ANY($1) GROUP BY status ORDER BY status',
      [ids],
    );
    expect(statuses.rows).toEqual([
      { status: 'CREATED', n: 10 },
      { status: 'REJECTED', n: 20 },
    ]);
    const sku = await s.db.pool.query("SELECT available, held FROM sku_counters WHERE sku = 'k9'");
    expect(sku.rows[0]).toEqual({ available: 0, held: 10 });
  }, 120_000);
});
