import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { businessMetrics } from '../../src/platform/business-metrics.ts';
import { createSku, placeOrder, skuCounters, TENANT } from '../support/fixtures.ts';
import { startStack, type Stack } from '../support/stack.ts';

async function retries(code: string): Promise<number> {
  const metric = await businessMetrics.txRetries.get();
  return metric.values.find((v) => v.labels.code === code)?.value ?? 0;
}

// Proves one lock order (SKU row, then holding row, behind the reservation) for create, cancel and
// the expiry sweep: with a per-user limit that lets one buyer create and cancel at once, 200 rounds
// of them racing the sweep on one hot SKU meet no deadlock, answer no 5xx, and conserve every counter.
describe('lock order on the hot SKU', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  it('L-01: 200 create+cancel+expiry rounds with per_user_limit 3: zero deadlocks, zero 5xx, counters conserved', async () => {
    await createSku(s, { sku: 'hot', stock: 10_000, per_user_limit: 3, hold_ttl_ms: 1_000 });
    const admin = await s.token(TENANT, 'ops', 'admin');
    const users = await Promise.all(Array.from({ length: 6 }, (_, i) => s.token(TENANT, `u${i}`)));
    const open: string[][] = users.map(() => []);
    const deadlocksBefore = await retries('40P01');
    const statuses: Record<number, number> = {};
    const count = (status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);

    for (let round = 0; round < 200; round++) {
      s.clock.advance(300); // holds made ~4 rounds ago are past their expiry: the sweep races the rest
      const u = round % users.length;
      const v = (round + 1) % users.length;
      const create = async (user: number, key: string) => {
        const result = await placeOrder(s, users[user]!, key, { sku: 'hot' });
        count(result.status);
        if (result.status === 201) open[user]!.push(result.body.order_id as string);
      };
      const cancel = async (user: number) => {
        const orderId = open[user]!.shift();
        if (!orderId) return;
        const result = await s.call('POST', `/v1/orders/${orderId}/cancel`, { token: users[user]! });
        count(result.status);
      };
      await Promise.all([
        create(u, `r${round}-a`),
        create(u, `r${round}-b`),
        cancel(u),
        cancel(u),
        create(v, `r${round}-c`),
        cancel(v),
        s.call('POST', '/v1/admin/expiry/run', { token: admin }).then((r) => count(r.status)),
      ]);
    }

    expect(Object.keys(statuses).filter((status) => Number(status) >= 500)).toEqual([]);
    expect((await retries('40P01')) - deadlocksBefore).toBe(0);
    const sku = await skuCounters(s, 'hot');
    expect(sku.total).toBe(sku.available + sku.held + sku.confirmed);
    const sums = await s.db.pool.query<{ status: string; q: number }>(
      `SELECT status, sum(quantity)::int AS q FROM reservations WHERE sku = 'hot' GROUP BY status`,
    );
    const by = Object.fromEntries(sums.rows.map((r) => [r.status, r.q]));
    expect([sku.held, sku.released, sku.confirmed]).toEqual([by.HELD ?? 0, by.RELEASED ?? 0, by.CONFIRMED ?? 0]);
    const holdings = await s.db.pool.query<{ user_id: string; quantity: number; expected: number }>(
      `SELECT h.user_id, h.quantity, coalesce((SELECT sum(quantity)::int FROM reservations r WHERE r.tenant_id = h.tenant_id AND r.sku = h.sku AND r.user_id = h.user_id AND r.status IN ('HELD', 'CONFIRMED')), 0) AS expected
       FROM user_holdings h WHERE h.sku = 'hot'`,
    );
    for (const row of holdings.rows) expect([row.user_id, row.quantity]).toEqual([row.user_id, row.expected]);
    expect(statuses[201] ?? 0).toBeGreaterThan(100);
    expect(sku.released).toBeGreaterThan(50); // the sweep and the cancels really raced the creates
  }, 120_000);
});
