import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { expiredToken } from '../support/tokens.ts';
import { countRows, startStack, type HttpResult, type Stack } from '../support/stack.ts';
import { createSku, placeOrder, skuCounters, TENANT } from '../support/fixtures.ts';

// Every bad request gets a clear problem+json with a stable code and changes nothing.
describe('bad input', () => {
  let stack: Stack;
  let buyer: string;
  let stateBefore: string;

  const snapshot = async () => {
    const tables = ['orders', 'reservations', 'idempotency_keys', 'order_transitions', 'outbox'];
    const counts = await Promise.all(tables.map((t) => countRows(stack.db, t)));
    return JSON.stringify({ counts, sku: await skuCounters(stack, 'bi') });
  };
  const expectProblem = (result: HttpResult, status: number, code: string) => {
    expect(result.status).toBe(status);
    expect(result.headers.get('content-type')).toContain('application/problem+json');
    expect(result.body).toMatchObject({ status, code });
    expect(typeof result.body.title).toBe('string');
    expect(typeof result.body.detail).toBe('string');
    expect(typeof result.body.type).toBe('string');
  };

  beforeAll(async () => {
    stack = await startStack();
    await createSku(stack, { sku: 'bi', stock: 5 });
    buyer = await stack.token(TENANT, 'alice');
    stateBefore = await snapshot();
  });
  afterAll(async () => stack.close());

  const cases: Array<[string, () => Promise<HttpResult>, number, string]> = [
    [
      'missing key',
      () => stack.call('POST', '/v1/orders', { token: buyer, body: { sku: 'bi' } }),
      400,
      'IDEMPOTENCY_KEY_MISSING',
    ],
    ['oversized key', () => placeOrder(stack, buyer, 'k'.repeat(256), { sku: 'bi' }), 400, 'IDEMPOTENCY_KEY_INVALID'],
    ['key with a space', () => placeOrder(stack, buyer, 'has space', { sku: 'bi' }), 400, 'IDEMPOTENCY_KEY_INVALID'],
    ['non-ASCII key', () => placeOrder(stack, buyer, 'cl\u00e9', { sku: 'bi' }), 400, 'IDEMPOTENCY_KEY_INVALID'],
    ['unknown SKU', () => placeOrder(stack, buyer, 'u1', { sku: 'nope' }), 404, 'SKU_NOT_FOUND'],
    ['quantity 0', () => placeOrder(stack, buyer, 'q0', { sku: 'bi', quantity: 0 }), 400, 'VALIDATION'],
    ['quantity 10^9', () => placeOrder(stack, buyer, 'q9', { sku: 'bi', quantity: 1e9 }), 400, 'VALIDATION'],
    ['quantity as a string', () => placeOrder(stack, buyer, 'qs', { sku: 'bi', quantity: '1' }), 400, 'VALIDATION'],
    ['unknown field', () => placeOrder(stack, buyer, 'uf', { sku: 'bi', price: 1 }), 400, 'VALIDATION'],
    ['missing sku', () => placeOrder(stack, buyer, 'ms', {}), 400, 'VALIDATION'],
    [
      'malformed JSON',
      () =>
        stack.call('POST', '/v1/orders', { token: buyer, rawBody: '{"sku": ', headers: { 'idempotency-key': 'mj' } }),
      400,
      'VALIDATION',
    ],
    [
      'oversized body',
      () =>
        stack.call('POST', '/v1/orders', {
          token: buyer,
          rawBody: JSON.stringify({ sku: 'x'.repeat(40_000) }),
          headers: { 'idempotency-key': 'big' },
        }),
      413,
      'PAYLOAD_TOO_LARGE',
    ],
    [
      'no token',
      () => stack.call('POST', '/v1/orders', { body: { sku: 'bi' }, headers: { 'idempotency-key': 'nt' } }),
      401,
      'UNAUTHENTICATED',
    ],
    [
      'token signed with another secret',
      async () =>
        placeOrder(
          stack,
          await tokenSigner('another-secret-of-at-least-32-bytes-length').sign({
            tenantId: TENANT,
            userId: 'alice',
            scope: 'buyer',
          }),
          'ws',
          { sku: 'bi' },
        ),
      401,
      'UNAUTHENTICATED',
    ],
    ['garbage token', () => placeOrder(stack, 'not.a.jwt', 'gt', { sku: 'bi' }), 401, 'UNAUTHENTICATED'],
    ['expired token', async () => placeOrder(stack, await expiredToken(), 'et', { sku: 'bi' }), 401, 'UNAUTHENTICATED'],
    [
      'buyer on an admin route',
      () => stack.call('POST', '/v1/admin/skus', { token: buyer, body: { sku: 'z', name: 'z', price: 1, stock: 1 } }),
      403,
      'FORBIDDEN',
    ],
    ['buyer on the expiry route', () => stack.call('POST', '/v1/admin/expiry/run', { token: buyer }), 403, 'FORBIDDEN'],
    [
      'negative SKU price',
      async () =>
        stack.call('POST', '/v1/admin/skus', {
          token: await stack.token(TENANT, 'ops', 'admin'),
          body: { sku: 'neg', name: 'n', price: -1, stock: 1 },
        }),
      400,
      'VALIDATION',
    ],
    ['unknown route', () => stack.call('GET', '/v1/nothing', { token: buyer }), 404, 'NOT_FOUND'],
  ];

  it.each(cases)('%s', async (_name, request, status, code) => {
    expectProblem(await request(), status, code);
    expect(await snapshot()).toBe(stateBefore);
  });

  it('another user or another tenant asking for an order gets 404 ORDER_NOT_FOUND, never 403', async () => {
    // Proves existence is not revealed across users or tenants, for reads and for cancel.
    const mine = await placeOrder(stack, buyer, 'mine', { sku: 'bi' });
    const before = await snapshot();
    const mallory = await stack.token(TENANT, 'mallory');
    const otherTenant = await stack.token('tenant-z', 'alice');
    for (const token of [mallory, otherTenant]) {
      expectProblem(await stack.call('GET', `/v1/orders/${mine.body.order_id}`, { token }), 404, 'ORDER_NOT_FOUND');
      expectProblem(
        await stack.call('GET', `/v1/orders/${mine.body.order_id}/timeline`, { token }),
        404,
        'ORDER_NOT_FOUND',
      );
      expectProblem(
        await stack.call('POST', `/v1/orders/${mine.body.order_id}/cancel`, { token }),
        404,
        'ORDER_NOT_FOUND',
      );
    }
    expectProblem(await stack.call('GET', '/v1/orders/ord_doesnotexist', { token: buyer }), 404, 'ORDER_NOT_FOUND');
    expect(await snapshot()).toBe(before);
    expect((await stack.call('GET', `/v1/orders/${mine.body.order_id}`, { token: buyer })).body.status).toBe('CREATED');
  });
});
