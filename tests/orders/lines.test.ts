import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, placeOrder, skuCounters, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';

describe('orders of several lines with price snapshots (seed 004)', () => {
  let s: Stack;
  let admin: string;
  beforeAll(async () => {
    s = await startStack();
    admin = await s.token(TENANT, 'ops', 'admin');
  });
  afterAll(async () => s.close());

  const counters = (...skus: string[]) => Promise.all(skus.map((sku) => skuCounters(s, sku)));

  it('L-01 three lines, one short of stock: 409 SOLD_OUT naming it, no order, no reservation, no counter moved', async () => {
    // Proves all-or-nothing across lines: the two lines reserved before the refusal are undone.
    await createSku(s, { sku: 'l1a', stock: 5 });
    await createSku(s, { sku: 'l1b', stock: 5 });
    await createSku(s, { sku: 'l1c', stock: 1 });
    const before = await counters('l1a', 'l1b', 'l1c');
    const buyer = await s.token(TENANT, 'l1-user');
    // A first order takes l1c's last unit; the second then finds it short.
    const refused = await placeOrder(s, buyer, 'l1-key', {
      lines: [{ sku: 'l1c', quantity: 1 }, { sku: 'l1a' }, { sku: 'l1b', quantity: 2 }],
    });
    expect(refused.status).toBe(201);
    const short = await placeOrder(s, buyer, 'l1-key-2', {
      lines: [{ sku: 'l1b', quantity: 2 }, { sku: 'l1c' }, { sku: 'l1a', quantity: 3 }],
    });
    expect([short.status, short.body.code, short.body.sku]).toEqual([409, 'SOLD_OUT', 'l1c']);
    expect(await countRows(s.db, 'orders', "user_id = 'l1-user'")).toBe(1);
    expect(await countRows(s.db, 'reservations', "user_id = 'l1-user'")).toBe(3);
    const after = await counters('l1a', 'l1b', 'l1c');
    expect(after.map((c) => [c.available, c.held])).toEqual([
      [before[0]!.available - 1, 1],
      [before[1]!.available - 2, 2],
      [0, 1],
    ]);
    const view = await s.call('GET', `/v1/orders/${refused.body.order_id}`, { token: buyer });
    expect(view.body.lines.map((l: { sku: string }) => l.sku)).toEqual(['l1a', 'l1b', 'l1c']);
    expect(view.body.reservations.map((r: { status: string }) => r.status)).toEqual(['HELD', 'HELD', 'HELD']);
  });

  it('L-02 a per-user limit refuses its line and the whole order; the other lines leave no holding behind', async () => {
    // Proves limits apply per line and a refusal later in SKU order undoes the earlier holdings too.
    await createSku(s, { sku: 'l2a', stock: 10, per_user_limit: 5 });
    await createSku(s, { sku: 'l2b', stock: 10, per_user_limit: 1 });
    const buyer = await s.token(TENANT, 'l2-user');
    const refused = await placeOrder(s, buyer, 'l2-key', {
      lines: [
        { sku: 'l2b', quantity: 2 },
        { sku: 'l2a', quantity: 5 },
      ],
    });
    expect([refused.status, refused.body.code, refused.body.sku]).toEqual([409, 'USER_LIMIT', 'l2b']);
    expect(await countRows(s.db, 'user_holdings', "user_id = 'l2-user' AND quantity > 0")).toBe(0);
    expect((await counters('l2a', 'l2b')).map((c) => c.available)).toEqual([10, 10]);
    expect((await placeOrder(s, buyer, 'l2-ok', { lines: [{ sku: 'l2b' }, { sku: 'l2a', quantity: 5 }] })).status).toBe(
      201,
    );
    const bad = await Promise.all([
      placeOrder(s, buyer, 'l2-dup', { lines: [{ sku: 'l2a' }, { sku: 'l2a' }] }),
      placeOrder(s, buyer, 'l2-both', { sku: 'l2a', lines: [{ sku: 'l2b' }] }),
      placeOrder(s, buyer, 'l2-empty', { lines: [] }),
      placeOrder(s, buyer, 'l2-many', { lines: Array.from({ length: 21 }, (_, i) => ({ sku: `x${i}` })) }),
      placeOrder(s, buyer, 'l2-qty', { lines: [{ sku: 'l2a' }], quantity: 2 }),
    ]);
    expect(bad.map((r) => [r.status, r.body.code])).toEqual(Array(5).fill([400, 'VALIDATION']));
    const missing = await placeOrder(s, buyer, 'l2-missing', { lines: [{ sku: 'l2a' }, { sku: 'nope' }] });
    expect([missing.status, missing.body.code]).toEqual([404, 'SKU_NOT_FOUND']);
    expect(await countRows(s.db, 'orders', "user_id = 'l2-user'")).toBe(1);
  });

  it('L-03 each line keeps its name and unit price: a later PATCH changes new orders only', async () => {
    // Proves the snapshot ("后面改价不影响这张单"): the order, its lines and its amount never follow the catalogue.
    await createSku(s, { sku: 'l3a', name: 'Tea', price: 300, stock: 10 });
    await createSku(s, { sku: 'l3b', name: 'Cup', price: 1200, stock: 10 });
    const buyer = await s.token(TENANT, 'l3-user');
    const first = await placeOrder(s, buyer, 'l3-1', { lines: [{ sku: 'l3b' }, { sku: 'l3a', quantity: 3 }] });
    expect(first.body).toMatchObject({
      amount: 2100,
      lines: [
        { sku: 'l3a', name: 'Tea', unit_price: 300, quantity: 3, amount: 900 },
        { sku: 'l3b', name: 'Cup', unit_price: 1200, quantity: 1, amount: 1200 },
      ],
    });
    const patched = await s.call('PATCH', '/v1/admin/skus/l3a', {
      token: admin,
      body: { price: 500, name: 'Green tea', add_stock: 5 },
    });
    expect(patched.body).toMatchObject({
      sku: 'l3a',
      name: 'Green tea',
      price: 500,
      total: 15,
      available: 12,
      held: 3,
    });
    const old = await s.call('GET', `/v1/orders/${first.body.order_id}`, { token: buyer });
    expect(old.body).toMatchObject({ amount: 2100, lines: first.body.lines });
    const second = await placeOrder(s, buyer, 'l3-2', { lines: [{ sku: 'l3a', quantity: 3 }] });
    expect(second.body).toMatchObject({
      amount: 1500,
      lines: [{ sku: 'l3a', name: 'Green tea', unit_price: 500, amount: 1500 }],
    });
    const refused = await Promise.all([
      s.call('PATCH', '/v1/admin/skus/l3a', { token: admin, body: {} }),
      s.call('PATCH', '/v1/admin/skus/l3a', { token: admin, body: { add_stock: 0 } }),
      s.call('PATCH', '/v1/admin/skus/l3a', { token: admin, body: { price: -1 } }),
      s.call('PATCH', '/v1/admin/skus/l3a', { token: buyer, body: { price: 1 } }),
      s.call('PATCH', '/v1/admin/skus/nope', { token: admin, body: { price: 1 } }),
    ]);
    expect(refused.map((r) => r.status)).toEqual([400, 400, 400, 403, 404]);
    expect(await skuCounters(s, 'l3a')).toMatchObject({ total: 15, available: 9, held: 6 });
  });

  it('L-04 the digest is over the canonical lines: the same lines in another order replay, other quantities are 422', async () => {
    // Proves the fingerprint of seed 004: line order does not matter, content does.
    await createSku(s, { sku: 'l4a', stock: 10 });
    await createSku(s, { sku: 'l4b', stock: 10 });
    const buyer = await s.token(TENANT, 'l4-user');
    const first = await placeOrder(s, buyer, 'l4-key', { lines: [{ sku: 'l4a' }, { sku: 'l4b', quantity: 2 }] });
    const again = await placeOrder(s, buyer, 'l4-key', {
      lines: [
        { sku: 'l4b', quantity: 2 },
        { quantity: 1, sku: 'l4a' },
      ],
    });
    expect([again.status, again.text, again.headers.get('idempotent-replayed')]).toEqual([201, first.text, 'true']);
    const other = await placeOrder(s, buyer, 'l4-key', { lines: [{ sku: 'l4a', quantity: 2 }, { sku: 'l4b' }] });
    expect([other.status, other.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    // One line in either form is the same request.
    const one = await placeOrder(s, buyer, 'l4-one', { sku: 'l4a' });
    expect((await placeOrder(s, buyer, 'l4-one', { lines: [{ sku: 'l4a', quantity: 1 }] })).text).toBe(one.text);
    expect(await countRows(s.db, 'orders', "user_id = 'l4-user'")).toBe(2);
    expect((await counters('l4a', 'l4b')).map((c) => c.held)).toEqual([2, 2]);
  });

  it('L-05 two buyers ordering {A,B} and {B,A} 200 times at once: no deadlock, no 5xx, counters conserved', async () => {
    // Proves the fixed lock order (by SKU): opposite request orders take the SKU rows the same way round.
    await createSku(s, { sku: 'l5a', stock: 150 });
    await createSku(s, { sku: 'l5b', stock: 150 });
    const [x, y] = await Promise.all([s.token(TENANT, 'l5-x'), s.token(TENANT, 'l5-y')]);
    const jobs = Array.from({ length: 200 }, (_, i) => [
      () => placeOrder(s, x, `l5-x-${i}`, { lines: [{ sku: 'l5a' }, { sku: 'l5b' }] }),
      () => placeOrder(s, y, `l5-y-${i}`, { lines: [{ sku: 'l5b' }, { sku: 'l5a' }] }),
    ]).flat();
    const statuses: number[] = [];
    const IN_FLIGHT = 40;
    for (let i = 0; i < jobs.length; i += IN_FLIGHT)
      statuses.push(...(await Promise.all(jobs.slice(i, i + IN_FLIGHT).map((job) => job()))).map((r) => r.status));
    expect(statuses.filter((code) => code !== 201 && code !== 409)).toEqual([]);
    expect(statuses.filter((code) => code === 201)).toHaveLength(150);
    const [a, b] = await counters('l5a', 'l5b');
    expect([a, b]).toEqual([
      expect.objectContaining({ total: 150, available: 0, held: 150, confirmed: 0 }),
      expect.objectContaining({ total: 150, available: 0, held: 150, confirmed: 0 }),
    ]);
    expect(await countRows(s.db, 'order_lines', "sku IN ('l5a', 'l5b')")).toBe(300);
  });
});
