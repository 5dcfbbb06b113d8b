import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { createPool } from '../../src/platform/db.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { createSku, placeOrder, TENANT } from '../support/fixtures.ts';

describe('operational endpoints', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack.close());

  it('serves /healthz, /readyz, Prometheus /metrics and the OpenAPI document', async () => {
    // Proves an operator can probe and read the API without a token, and scrape metrics with one.
    expect((await stack.call('GET', '/healthz')).body).toEqual({ ok: true });
    expect((await stack.call('GET', '/readyz')).body).toEqual({ ok: true });
    await createSku(stack, { sku: 'm1', stock: 1 });
    const operator = await stack.token(TENANT, 'root', 'operator');
    expect((await stack.call('GET', '/metrics')).body).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    expect(
      (await stack.call('GET', '/metrics', { token: await stack.token(TENANT, 'ops', 'admin') })).body,
    ).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    const metrics = await stack.call('GET', '/metrics', { token: operator });
    expect(metrics.text).toMatch(
      /flashpay_http_requests_total\{method="POST",route="\/v1\/admin\/skus",status="201"\} 1/,
    );
    const token = await stack.token(TENANT, 'metered');
    expect((await placeOrder(stack, token, 'm-1', { sku: 'm1' })).status).toBe(201);
    expect((await placeOrder(stack, token, 'm-2', { sku: 'm1' })).status).toBe(409);
    const after = (await stack.call('GET', '/metrics', { token: operator })).text;
    const count = (status: string) =>
      Number(new RegExp(`flashpay_orders_total\\{status="${status}"\\} (\\d+)`).exec(after)?.[1] ?? 0);
    expect(count('201')).toBeGreaterThanOrEqual(1);
    expect(count('409')).toBeGreaterThanOrEqual(1);
    const openapi = await stack.call('GET', '/docs/json');
    expect(openapi.status).toBe(200);
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/orders',
        '/v1/orders/{id}/pay',
        '/v1/payment-notifications',
        '/v1/admin/reconciliation',
      ]),
    );
    expect((await stack.call('GET', '/docs')).status).toBeLessThan(400);
  });

  it('answers 503 UNAVAILABLE with Retry-After when the database cannot be reached, and executes nothing', async () => {
    // Proves an unreachable key store never turns into a guess: the client is told to retry.
    const ordersBefore = await countRows(stack.db, 'orders');
    const deadPool = createPool('postgres://nobody@127.0.0.1:1/none', 1);
    const app = await buildApp({ ...stack.deps, db: deadPool });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const token = await stack.token(TENANT, 'u');
      const response = await fetch(`http://127.0.0.1:${port}/v1/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'idempotency-key': 'k', 'content-type': 'application/json' },
        body: JSON.stringify({ sku: 'm1' }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toMatchObject({ code: 'UNAVAILABLE', status: 503 });
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
      expect(await countRows(stack.db, 'orders')).toBe(ordersBefore);
    } finally {
      await app.close();
      await deadPool.end();
    }
  });

  it('a validation error is not stored: the same key executes once the request is valid', async () => {
    // Proves 400s are not final answers for a key.
    await createSku(stack, { sku: 'm2', stock: 1 });
    const token = await stack.token(TENANT, 'v');
    expect((await placeOrder(stack, token, 'fix-me', { sku: 'm2', quantity: 0 })).status).toBe(400);
    const ok = await placeOrder(stack, token, 'fix-me', { sku: 'm2' });
    expect([ok.status, ok.headers.get('idempotent-replayed')]).toEqual([201, 'false']);
  });
});
