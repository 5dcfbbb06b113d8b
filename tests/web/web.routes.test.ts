import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, placeOrder, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';

describe('W15 the pages and the reads behind them (no browser)', () => {
  let stack: Stack;
  let production: Stack;
  beforeAll(async () => {
    stack = await startStack();
    production = await startStack({ config: { production: true } });
    await createSku(stack, { sku: 'tee', name: 'Launch tee', price: 1990, stock: 3 });
    await createSku(stack, { sku: 'other', name: 'Not yours', price: 500, stock: 1 }, 'tenant-b');
  });
  afterAll(async () => {
    await stack?.close();
    await production?.close();
  });

  it('W15-10: the demo sign-in gives a buyer token in development, is 403 in production, refuses bad names and is rate-limited', async () => {
    // Proves the development-only token endpoint cannot mint anything in production or for an admin.
    const refused = await production.call('POST', '/v1/dev/token', { body: { user: 'alice' } });
    expect([refused.status, refused.body.code, refused.body.token]).toEqual([403, 'FORBIDDEN', undefined]);
    expect(refused.headers.get('content-type')).toMatch(/application\/problem\+json/);

    const given = await stack.call('POST', '/v1/dev/token', { body: { user: 'alice', tenant: TENANT } });
    expect(given.status).toBe(200);
    expect(given.body).toMatchObject({ tenant: TENANT, user: 'alice', scope: 'buyer', expires_in: 3600 });
    expect((await stack.call('GET', '/v1/wallet', { token: given.body.token })).status).toBe(200);
    expect((await stack.call('GET', '/v1/admin/console/summary', { token: given.body.token })).body.code).toBe(
      'FORBIDDEN',
    );

    for (const body of [{ user: '../x' }, { user: 'alice', scope: 'admin' }, {}]) {
      const bad = await stack.call('POST', '/v1/dev/token', { body });
      expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION']);
    }
    // 6 per minute per principal, ten times that for an address without a token: 60 in a burst.
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++)
      statuses.push((await stack.call('POST', '/v1/dev/token', { body: { user: `u${i}` } })).status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    const limited = await stack.call('POST', '/v1/dev/token', { body: { user: 'late' } });
    expect([limited.status, limited.body.code]).toEqual([429, 'RATE_LIMITED']);
  });

  it("W15-11: a buyer sees the own tenant's SKUs (price, units left) and only the own orders, with timelines", async () => {
    // Proves the storefront's reads are scoped by the token: nothing of another buyer or tenant.
    const alice = await stack.token(TENANT, 'alice');
    const bob = await stack.token(TENANT, 'bob');
    const created = await placeOrder(stack, alice, 'w15-a', { sku: 'tee' });
    expect(created.status).toBe(201);
    const catalogue = await stack.call('GET', '/v1/skus', { token: alice });
    expect(catalogue.body).toEqual({ skus: [{ sku: 'tee', name: 'Launch tee', price: 1990, available: 2 }] });
    expect((await stack.call('GET', '/v1/skus')).status).toBe(401);

    const mine = await stack.call('GET', '/v1/orders', { token: alice });
    expect(mine.body.orders.map((o: { order_id: string }) => o.order_id)).toEqual([created.body.order_id]);
    expect(mine.body.orders[0].timeline.map((t: { to: string }) => t.to)).toEqual(['CREATED']);
    expect((await stack.call('GET', '/v1/orders', { token: bob })).body.orders).toEqual([]);
  });

  it("W15-12: the console's counts and lists are the tenant's own; a bad filter or another tenant's order changes nothing", async () => {
    // Proves the console reads the database by tenant and its retry acts only on a visible order.
    const admin = await stack.token(TENANT, 'ops', 'admin');
    const otherAdmin = await stack.token('tenant-b', 'ops', 'admin');
    const summary = await stack.call('GET', '/v1/admin/console/summary', { token: admin });
    const inDb = await countRows(stack.db, 'orders', 'tenant_id = $1', [TENANT]);
    expect(summary.body.total).toBe(inDb);
    expect(summary.body.outbox).toEqual({ pending: 0, oldest_pending_ms: 0, dead: 0 });
    expect((await stack.call('GET', '/v1/admin/console/summary', { token: otherAdmin })).body.total).toBe(0);

    const listed = await stack.call('GET', '/v1/admin/orders?status=CREATED', { token: admin });
    expect(listed.body.orders).toHaveLength(inDb);
    const bad = await stack.call('GET', '/v1/admin/orders?status=BOGUS', { token: admin });
    expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION']);

    const orderId = listed.body.orders[0].order_id as string;
    const before = await stack.db.pool.query('SELECT status, version FROM orders WHERE order_id = $1', [orderId]);
    const hidden = await stack.call('POST', `/v1/admin/orders/${orderId}/retry`, { token: otherAdmin });
    expect([hidden.status, hidden.body.code]).toEqual([404, 'ORDER_NOT_FOUND']);
    expect(
      (await stack.db.pool.query('SELECT status, version FROM orders WHERE order_id = $1', [orderId])).rows,
    ).toEqual(before.rows);
  });

  it('W15-13: the pages and the chart library are served from this server with a strict CSP; nothing else under /web', async () => {
    // Proves the pages work offline (no CDN) and cannot be made to serve an arbitrary file.
    for (const [url, type] of [
      ['/', 'text/html'],
      ['/ops', 'text/html'],
      ['/web/shop.js', 'text/javascript'],
      ['/web/chart.umd.js', 'text/javascript'],
      ['/web/style.css', 'text/css'],
    ]) {
      const response = await fetch(`${stack.url}${url}`);
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-type')).toContain(type);
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await response.text()).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)\./);
    }
    for (const url of ['/web/../package.json', '/web/%2e%2e/package.json', '/web/nope.js']) {
      expect((await fetch(`${stack.url}${url}`)).status, url).toBe(404);
    }
  });
});
