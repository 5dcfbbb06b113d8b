import { readFile } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlashpayClient, verifySignature, type paths, type ProblemCode } from 'flashpay/client';
import { buildApp } from '../../src/app.ts';
import { createPool } from '../../src/platform/db.ts';
import { signPayload } from '../../src/platform/signature.ts';
import { countRows, TEST_NOTIFY_SECRET } from '../support/stack.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

describe('an integrator’s client, generated from /docs/json', () => {
  let stack: PaymentStack;
  beforeAll(async () => {
    stack = await startPaymentStack();
    await createSku(stack, { sku: 'cl-1', stock: 5, price: 1990 });
  });
  afterAll(async () => stack.close());

  it('the shipped client types are exactly what openapi-typescript generates from the served document', async () => {
    // Proves a standard generator accepts /docs/json, and that flashpay/client is not hand-kept.
    const served = await (await fetch(`${stack.url}/docs/json`)).json();
    const generated = astToString(await openapiTS(served));
    const shipped = await readFile(new URL('../../packages/client/src/generated/api.ts', import.meta.url), 'utf8');
    expect(shipped.replace(/^\/\*\*[\s\S]*?\*\/\s*/, '').trim()).toBe(generated.trim());
  });

  it('a bare openapi-fetch client from the document creates, replays, pays and reads an order', async () => {
    // Proves the document alone is enough: headers, bodies and answers as an outside tool sees them.
    const token = await stack.token(TENANT, 'gen-user');
    const api = createClient<paths>({ baseUrl: stack.url, headers: { authorization: `Bearer ${token}` } });
    const key = { params: { header: { 'idempotency-key': 'gen-create-1' } } };
    const first = await api.POST('/v1/orders', { body: { sku: 'cl-1' }, ...key });
    expect(first.response.status).toBe(201);
    expect(first.response.headers.get('idempotent-replayed')).toBe('false');
    const again = await api.POST('/v1/orders', { body: { sku: 'cl-1' }, ...key });
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data).toEqual(first.data);
    const orderId = first.data?.order_id ?? '';
    const paid = await api.POST('/v1/orders/{id}/pay', {
      params: { path: { id: orderId }, header: { 'idempotency-key': 'gen-pay-1' } },
    });
    expect(paid.data).toEqual({ order_id: orderId, status: 'PAID' });
    const read = await api.GET('/v1/orders/{id}', { params: { path: { id: orderId } } });
    expect(read.data).toMatchObject({
      order_id: orderId,
      status: 'PAID',
      amount: 1990,
      reservation: { status: 'CONFIRMED' },
    });
    expect(await countRows(stack.db, 'orders', 'user_id = $1', ['gen-user'])).toBe(1);
    expect(await stack.chargeRequests(orderId)).toBe(1);
  });

  it('flashpay/client keys create and pay itself, replays on request, and types problem codes', async () => {
    // Proves the typed client does what an integrator needs without reading the source.
    const client = createFlashpayClient({ baseUrl: stack.url, token: await stack.token(TENANT, 'sdk-user') });
    const created = await client.createOrder({ sku: 'cl-1' });
    if (!created.ok) throw new Error(created.problem.detail);
    expect(created).toMatchObject({ status: 201, replayed: false, location: `/v1/orders/${created.data.order_id}` });
    expect(created.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    const replay = await client.createOrder({ sku: 'cl-1' }, { idempotencyKey: created.idempotencyKey });
    expect(replay).toMatchObject({ ok: true, replayed: true, data: created.data });
    const reused = await client.createOrder({ sku: 'cl-1', quantity: 2 }, { idempotencyKey: created.idempotencyKey });
    const code: ProblemCode | undefined = reused.problem?.code;
    expect(code).toBe('IDEMPOTENCY_KEY_REUSED');
    const paid = await client.payOrder(created.data.order_id);
    expect(paid).toMatchObject({ ok: true, data: { status: 'PAID' }, replayed: false });
    expect((await client.payOrder(created.data.order_id, { idempotencyKey: paid.idempotencyKey })).replayed).toBe(true);
    const order = await client.getOrder(created.data.order_id);
    expect(order).toMatchObject({ ok: true, data: { status: 'PAID', version: 3 } });
    expect((await client.getTimeline(created.data.order_id)).data?.map((t) => t.to)).toEqual([
      'CREATED',
      'PAYING',
      'PAID',
    ]);
    expect(await countRows(stack.db, 'orders', 'user_id = $1', ['sdk-user'])).toBe(1);
    expect(await stack.chargeRequests(created.data.order_id)).toBe(1);
    const missing = await client.getOrder('no-such-order');
    expect(missing).toMatchObject({ ok: false, status: 404, problem: { code: 'ORDER_NOT_FOUND' } });
  });

  it('retries a 503 with Retry-After with the same key, and nothing executes twice', async () => {
    // Proves the client's retries are safe: it resends only what the server said was not executed.
    const deadPool = createPool('postgres://nobody@127.0.0.1:1/none', 1);
    const app = await buildApp({ ...stack.deps, db: deadPool });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const sent: Array<string | null> = [];
    try {
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const client = createFlashpayClient({
        baseUrl: `http://127.0.0.1:${port}`,
        token: await stack.token(TENANT, 'retry-user'),
        maxAttempts: 3,
        maxRetryAfterMs: 10,
        fetch: async (request) => {
          sent.push((request as Request).headers.get('idempotency-key'));
          return fetch(request);
        },
      });
      const result = await client.createOrder({ sku: 'cl-1' }, { idempotencyKey: 'retry-1' });
      expect(result).toMatchObject({ ok: false, status: 503, attempts: 3, problem: { code: 'UNAVAILABLE' } });
      expect(sent).toEqual(['retry-1', 'retry-1', 'retry-1']);
      // A refusal that is final is not retried.
      sent.length = 0;
      const unauthenticated = createFlashpayClient({
        baseUrl: `http://127.0.0.1:${port}`,
        fetch: async (request) => (sent.push('x'), fetch(request)),
      });
      expect(await unauthenticated.getOrder('o')).toMatchObject({
        status: 401,
        attempts: 1,
        problem: { code: 'UNAUTHENTICATED' },
      });
      expect(sent).toHaveLength(1);
    } finally {
      await app.close();
      await deadPool.end();
    }
    expect(await countRows(stack.db, 'orders', 'user_id = $1', ['retry-user'])).toBe(0);
  });

  it('verifySignature accepts what flashpay signs and refuses a changed body, another secret or an old timestamp', () => {
    const body = JSON.stringify({ notify_id: 'n1', merchant_order: 'o1', kind: 'CHARGED', amount: 1990, txn: 't1' });
    const now = 1_800_000_000;
    const header = signPayload(TEST_NOTIFY_SECRET, body, now);
    expect(verifySignature(TEST_NOTIFY_SECRET, header, body, { nowSeconds: now })).toBe(true);
    expect(verifySignature(TEST_NOTIFY_SECRET, header, Buffer.from(body), { nowSeconds: now + 299 })).toBe(true);
    expect(verifySignature(TEST_NOTIFY_SECRET, header, body.replace('1990', '1'), { nowSeconds: now })).toBe(false);
    expect(verifySignature('another-secret-also-at-least-32-bytes', header, body, { nowSeconds: now })).toBe(false);
    expect(verifySignature(TEST_NOTIFY_SECRET, header, body, { nowSeconds: now + 301 })).toBe(false);
    expect(verifySignature(TEST_NOTIFY_SECRET, undefined, body)).toBe(false);
  });
});
