import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'flashpay/client';
import { startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

// `client.skus.list()` against the real `GET /v1/admin/skus?limit=&cursor=` (issue 52, part A adds
// the route; this file passes once that branch and the client's are merged).
describe('@flashpay/client skus.list on the real route (SL)', () => {
  let stack: PaymentStack;
  beforeAll(async () => {
    stack = await startPaymentStack();
  });
  afterAll(async () => stack.close());

  it('SL-01: skus.list pages through every SKU of the tenant once, each with the counters skus.get answers', async () => {
    const admin = createClient({ baseUrl: stack.url, token: await stack.token(TENANT, 'sl-ops', 'admin') });
    const other = createClient({ baseUrl: stack.url, token: await stack.token('sl-other', 'sl-ops', 'admin') });
    await other.skus.create({ sku: 'sl-foreign', name: 'not ours', price: 100, stock: 1 });
    for (let i = 0; i < 5; i++) await admin.skus.create({ sku: `sl-${i}`, name: `SL ${i}`, price: 100 + i, stock: 3 });
    const buyer = createClient({ baseUrl: stack.url, token: await stack.token(TENANT, 'sl-buyer') });
    await buyer.pay((await buyer.createOrder({ sku: 'sl-2' })).order_id);

    const pages: number[] = [];
    for await (const page of admin.skus.list({ pageSize: 2 }).pages()) pages.push(page.items.length);
    const listed = await admin.skus.list({ pageSize: 2 }).all();
    const rows = await stack.db.pool.query<{ sku: string }>('SELECT sku FROM skus WHERE tenant_id = $1', [TENANT]);
    expect(listed.map((s) => s.sku).sort()).toEqual(rows.rows.map((r) => r.sku).sort());
    expect(new Set(listed.map((s) => s.sku)).size).toBe(listed.length);
    expect(pages.reduce((a, b) => a + b, 0)).toBe(rows.rows.length);
    expect(Math.max(...pages)).toBeLessThanOrEqual(2);
    for (const sku of listed) {
      const one = await admin.skus.get(sku.sku);
      const { total, available, held, confirmed } = one;
      expect(sku).toMatchObject({ sku: one.sku, total, available, held, confirmed });
    }
  });
});
