import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { createSku, placeOrder, skuCounters, TENANT } from '../support/fixtures.ts';
import { everyOf } from '../support/every.ts';

describe('creating orders under contention', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack.close());

  it('40 concurrent buyers for 10 units: exactly 10 orders, 30 SOLD_OUT, stock conserved', async () => {
    // Proves the conditional decrement never oversells and a sold-out buyer leaves no order row.
    await createSku(stack, { sku: 'hot-1', stock: 10 });
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) =>
        placeOrder(stack, await stack.token(TENANT, `buyer-${i}`), `k-${i}`, { sku: 'hot-1' }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(10);
    const refused = answers.filter((a) => a.status === 409);
    expect(refused).toHaveLength(30);
    expect(everyOf(refused, (a) => a.body.code === 'SOLD_OUT')).toBe(true);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['hot-1'])).toBe(10);
    expect(await countRows(stack.db, 'orders', "sku = $1 AND status = 'CREATED'", ['hot-1'])).toBe(10);
    const c = await skuCounters(stack, 'hot-1');
    expect(c).toMatchObject({ total: 10, available: 0, held: 10, confirmed: 0 });
    expect(c.available + c.held + c.confirmed).toBe(c.total);
  });

  it('one user racing 10 requests with different keys gets at most the per-user limit', async () => {
    // Proves the per-user limit holds under concurrency, not just sequentially.
    await createSku(stack, { sku: 'limited', stock: 100, per_user_limit: 2 });
    const token = await stack.token(TENANT, 'greedy');
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => placeOrder(stack, token, `g-${i}`, { sku: 'limited' })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(2);
    expect(answers.filter((a) => a.status === 409 && a.body.code === 'USER_LIMIT')).toHaveLength(8);
    expect(await countRows(stack.db, 'orders', 'sku = $1 AND user_id = $2', ['limited', 'greedy'])).toBe(2);
    expect(await skuCounters(stack, 'limited')).toMatchObject({ available: 98, held: 2 });
  });

  it('16 concurrent requests with one key make one order and 16 identical answers', async () => {
    // Proves the unique key decides: one executes, fifteen wait and replay it byte for byte.
    await createSku(stack, { sku: 'same-key', stock: 50 });
    const token = await stack.token(TENANT, 'retrier');
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => placeOrder(stack, token, 'one-key', { sku: 'same-key', quantity: 1 })),
    );
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([201]));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(new Set(answers.map((a) => a.headers.get('location'))).size).toBe(1);
    const replayed = answers.map((a) => a.headers.get('idempotent-replayed'));
    expect(replayed.filter((r) => r === 'false')).toHaveLength(1);
    expect(replayed.filter((r) => r === 'true')).toHaveLength(15);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['same-key'])).toBe(1);
    expect(await skuCounters(stack, 'same-key')).toMatchObject({ available: 49, held: 1 });
  });

  it('same key, different quantity: 422 IDEMPOTENCY_KEY_REUSED, no order, no stock change', async () => {
    // Proves a reused key is refused before any side effect.
    await createSku(stack, { sku: 'reuse', stock: 10 });
    const token = await stack.token(TENANT, 'reuser');
    const first = await placeOrder(stack, token, 'reused-key', { sku: 'reuse', quantity: 1 });
    expect(first.status).toBe(201);
    const second = await placeOrder(stack, token, 'reused-key', { sku: 'reuse', quantity: 2 });
    expect(second.status).toBe(422);
    expect(second.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(second.headers.get('content-type')).toContain('application/problem+json');
    expect(second.headers.get('idempotent-replayed')).toBe('false');
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['reuse'])).toBe(1);
    expect(await skuCounters(stack, 'reuse')).toMatchObject({ available: 9, held: 1 });
    // key order and whitespace do not matter: the same request is a replay
    const again = await stack.call('POST', '/v1/orders', {
      token,
      rawBody: '{ "quantity": 1,  "sku": "reuse" }',
      headers: { 'idempotency-key': 'reused-key' },
    });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('the same key used by another user or another tenant makes independent orders', async () => {
    // Proves the key scope is (tenant, user, operation), taken from the verified token.
    await createSku(stack, { sku: 'scoped', stock: 10 });
    await createSku(stack, { sku: 'scoped', stock: 10 }, 'tenant-b');
    const a = await placeOrder(stack, await stack.token(TENANT, 'u1'), 'shared', { sku: 'scoped' });
    const b = await placeOrder(stack, await stack.token(TENANT, 'u2'), 'shared', { sku: 'scoped' });
    const c = await placeOrder(stack, await stack.token('tenant-b', 'u1'), 'shared', { sku: 'scoped' });
    expect([a.status, b.status, c.status]).toEqual([201, 201, 201]);
    expect(new Set([a.body.order_id, b.body.order_id, c.body.order_id]).size).toBe(3);
    expect([a, b, c].map((r) => r.headers.get('idempotent-replayed'))).toEqual(['false', 'false', 'false']);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['scoped'])).toBe(3);
  });

  it('a SOLD_OUT answer is final for its key, and the amount is a price snapshot', async () => {
    // Proves business refusals are replayed, and a later price change does not alter an order.
    await createSku(stack, { sku: 'tiny', stock: 1, price: 500 });
    const buyer = await stack.token(TENANT, 'early');
    const won = await placeOrder(stack, buyer, 'w', { sku: 'tiny', quantity: 1 });
    expect(won.body.amount).toBe(500);
    const late = await stack.token(TENANT, 'late');
    const lost = await placeOrder(stack, late, 'l', { sku: 'tiny' });
    expect(lost.status).toBe(409);
    await stack.db.pool.query(`UPDATE skus SET price = 900 WHERE sku = 'tiny'`);
    const again = await placeOrder(stack, late, 'l', { sku: 'tiny' });
    expect(again.status).toBe(409);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const view = await stack.call('GET', `/v1/orders/${won.body.order_id}`, { token: buyer });
    expect(view.body.amount).toBe(500);
  });
});
