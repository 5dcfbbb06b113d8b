import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/db.ts';
import { createSku, placeOrder, TENANT } from '../support/fixtures.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { eventually } from '../support/payments.ts';

// Proves same-key retries wait without holding pool connections: while one create is stuck behind a
// locked hot row, 30 retries of its key leave the 4-connection pool free for everybody else.
describe('same-key waiters and the pool', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ db: await freshDatabase({ poolSize: 4 }) });
  });
  afterAll(async () => {
    await s.close();
    await s.db.drop();
  });

  it('K-01: 30 same-key retries behind a locked SKU; another buyer is served meanwhile; all 30 get the one answer', async () => {
    await createSku(s, { sku: 'stuck', stock: 5 });
    await createSku(s, { sku: 'free', stock: 5 });
    const alice = await s.token(TENANT, 'alice');
    const bob = await s.token(TENANT, 'bob');
    const blocker = new pg.Client({ connectionString: s.db.url });
    await blocker.connect();
    await blocker.query(`BEGIN; SELECT 1 FROM skus WHERE sku = 'stuck' FOR UPDATE`);
    const first = placeOrder(s, alice, 'same', { sku: 'stuck' });
    // The first is inside its transaction, queued on the SKU row.
    await eventually(
      async () =>
        (
          await blocker.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
          )
        ).rows[0]?.n ?? 0,
      (n) => n >= 1,
    );
    const retries = Array.from({ length: 30 }, () => placeOrder(s, alice, 'same', { sku: 'stuck' }));
    const other = await placeOrder(s, bob, 'bob-1', { sku: 'free' });
    expect(other.status).toBe(201);
    await blocker.query('COMMIT');
    await blocker.end();
    const answers = await Promise.all([first, ...retries]);
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`)).size).toBe(1);
    expect(answers[0]?.status).toBe(201);
    const orders = await s.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders WHERE sku = 'stuck'`);
    expect(orders.rows[0]?.n).toBe(1);
  });
});
