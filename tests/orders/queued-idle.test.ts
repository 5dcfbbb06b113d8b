import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, TENANT } from '../support/fixtures.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { createStockPump } from '../../src/orders/queued/pipeline.ts';
import { createPool, type Db } from '../../src/platform/db.ts';

// The stock pump of `flashpay start` drains every 100 ms. With nothing queued it used to run a
// whole pass anyway (the re-send check, then three claims in three transactions: about ten
// statements); it now asks one question per side, on partial indexes, and runs a pass only when
// the answer is yes. The answer covers everything a pass could move, so a queued order is still
// drained by the next drain.

describe('queued orders: an idle stock pump asks before it runs a pass', () => {
  let s: Stack;
  let one: Db;
  const statements: string[] = [];
  beforeAll(async () => {
    s = await startStack();
    // The pump's own connection, whose statements the test lists.
    one = createPool(s.db.url, 1);
    one.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const config = args[0] as string | { text: string };
        statements.push(typeof config === 'string' ? config : config.text);
        return query(...args);
      };
    });
  });
  afterAll(async () => {
    await one.end();
    await s.close();
  });

  const pump = () =>
    createStockPump({ shopDb: one, stockDb: one, clock: s.clock, leaseMs: 30_000, resendAfterMs: 60_000 });
  async function drained() {
    statements.length = 0;
    const pass = await pump().drain();
    return { pass, statements: [...statements] };
  }

  it('Q-11 idle: two statements and no transaction; a queued order is drained by the next drain; idle again after it', async () => {
    const idle = await drained();
    expect(idle.pass).toEqual({ requests: 0, applied: 0, results: 0, resent: 0 });
    expect(idle.statements).toHaveLength(2);
    expect(idle.statements.some((t) => /^\s*(BEGIN|COMMIT)/.test(t))).toBe(false);

    await createSku(s, { sku: 'q11', stock: 2 });
    const buyer = await s.token(TENANT, 'q11-user');
    const placed = await s.call('POST', '/v1/orders', {
      token: buyer,
      body: { sku: 'q11' },
      headers: { 'idempotency-key': 'q11-key', prefer: 'respond-async' },
    });
    expect([placed.status, placed.body.status]).toEqual([202, 'PENDING']);
    const busy = await drained();
    expect(busy.pass).toMatchObject({ requests: 1, applied: 1, results: 1 });
    const order = await s.db.pool.query<{ status: string }>('SELECT status FROM orders WHERE order_id = $1', [
      placed.body.order_id,
    ]);
    expect(order.rows[0]?.status).toBe('CREATED');

    expect((await drained()).statements).toHaveLength(2);
  });
});
