import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, FlashpayError, type ReasonedCall } from 'flashpay/client';
import { startPaymentStack, TENANT, unknownOrder, type PaymentStack } from '../support/payments.ts';

// The admin calls as resources, the auto-paging lists and the typed network error of
// @flashpay/client (issue 52), against the real API over HTTP and its database.
describe('@flashpay/client admin resources, paging and network errors (CA)', () => {
  let stack: PaymentStack;
  let adminToken = '';
  const statusOf = async (orderId: string) =>
    (await stack.db.pool.query<{ status: string }>('SELECT status FROM orders WHERE order_id = $1', [orderId])).rows[0]
      ?.status;
  beforeAll(async () => {
    stack = await startPaymentStack();
    adminToken = await stack.token(TENANT, 'ca-ops', 'admin');
  });
  afterAll(async () => stack.close());

  it('CA-01: skus.create and skus.get; orders.list pages a buyer’s orders newest first through every page', async () => {
    const admin = createClient({ baseUrl: stack.url, token: adminToken });
    const made = await admin.skus.create({ sku: 'ca-tee', name: 'CA tee', price: 1500, stock: 10 });
    expect(made).toMatchObject({ sku: 'ca-tee', price: 1500 });
    const taken = await admin.skus.create({ sku: 'ca-tee', name: 'again', price: 1, stock: 1 }).catch((e) => e);
    expect(taken).toBeInstanceOf(FlashpayError);
    expect((taken as FlashpayError).code).toBe('SKU_EXISTS');

    const buyer = createClient({ baseUrl: stack.url, token: await stack.token(TENANT, 'ca-pager') });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await buyer.createOrder({ sku: 'ca-tee' })).order_id);
    expect(await admin.skus.get('ca-tee')).toMatchObject({ total: 10, available: 5, held: 5, confirmed: 0 });

    const pageSizes: number[] = [];
    for await (const page of admin.orders.list({ q: 'ca-pager', pageSize: 2 }).pages())
      pageSizes.push(page.items.length);
    expect(pageSizes).toEqual([2, 2, 1]);
    const listed = await admin.orders.list({ q: 'ca-pager', pageSize: 2 }).all();
    const rows = await stack.db.pool.query<{ order_id: string }>(
      'SELECT order_id FROM orders WHERE user_id = $1 ORDER BY created_at DESC, order_id DESC',
      ['ca-pager'],
    );
    expect(listed.map((o) => o.order_id)).toEqual(rows.rows.map((r) => r.order_id));
    expect([...ids].sort()).toEqual(listed.map((o) => o.order_id).sort());
    // `break` stops the reading: no page past the one in hand is fetched.
    let seen = 0;
    for await (const order of admin.orders.list({ q: 'ca-pager', pageSize: 2 })) {
      expect(order.user_id).toBe('ca-pager');
      if (++seen === 3) break;
    }
    expect(seen).toBe(3);
  });

  it('CA-02: orders.refund / cancel need a reason and act once per key; retry answers the order as stored; get is the admin view', async () => {
    const admin = createClient({ baseUrl: stack.url, token: adminToken });
    await admin.skus.create({ sku: 'ca-mug', name: 'CA mug', price: 900, stock: 10 });
    const buyer = createClient({ baseUrl: stack.url, token: await stack.token(TENANT, 'ca-refund') });
    const paid = await buyer.createOrder({ sku: 'ca-mug' });
    expect((await buyer.pay(paid.order_id)).status).toBe('PAID');

    const noReason = await admin.orders
      .refund(paid.order_id, { reason: '' })
      .then(() => 'refunded')
      .catch((e: FlashpayError) => `${e.code}:${JSON.stringify(e.problem)}`);
    expect(noReason).toMatch(/^VALIDATION:.*reason/);
    // @ts-expect-error: the reason is required by the type too
    const untyped: ReasonedCall = {};
    expect(await admin.orders.refund(paid.order_id, untyped).catch((e: FlashpayError) => e.code)).toBe('VALIDATION');
    expect(await statusOf(paid.order_id)).toBe('PAID');

    const key = 'ca-refund-1';
    const refunded = await admin.orders.refund(paid.order_id, { reason: 'parcel damaged', idempotencyKey: key });
    expect(refunded).toMatchObject({ order_id: paid.order_id, operator: 'ca-ops' });
    expect(['REFUNDING', 'REFUNDED']).toContain(refunded.status);
    const again = await admin.results.raw.POST('/v1/admin/orders/{id}/refund', {
      params: { path: { id: paid.order_id }, header: { 'idempotency-key': key } },
      body: { reason: 'clicked twice' },
    });
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    const refunds = await stack.statement();
    expect(refunds.lines.filter((l) => l.merchant_order === paid.order_id && l.type === 'REFUND')).toHaveLength(1);

    const view = await admin.orders.get(paid.order_id);
    expect(view).toMatchObject({ order_id: paid.order_id, status: await statusOf(paid.order_id) });
    expect(JSON.stringify(view)).toContain('parcel damaged');

    const unpaid = await buyer.createOrder({ sku: 'ca-mug' });
    expect(await admin.orders.cancel(unpaid.order_id, { reason: 'buyer asked by phone' })).toMatchObject({
      order_id: unpaid.order_id,
      status: 'CANCELLED',
    });
    expect(await statusOf(unpaid.order_id)).toBe('CANCELLED');

    // The provider's reply and its callback held back: the pay says UNKNOWN, the order waits for recovery.
    await stack.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const stuck = await unknownOrder(stack, 'ca-stuck', 'ca-mug', 1_500);
    const retried = await admin.orders.retry(stuck.orderId);
    expect(retried).toMatchObject({ order_id: stuck.orderId, status: await statusOf(stuck.orderId) });
  });

  it('CA-03: attention.list and reconciliation.get answer what the database holds', async () => {
    const operator = createClient({ baseUrl: stack.url, token: stack.operator });
    const report = await operator.reconciliation.get();
    const counted = await stack.db.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM orders GROUP BY status',
    );
    expect(report.statuses).toEqual(Object.fromEntries(counted.rows.map((r) => [r.status, r.n])));
    const attention = await operator.attention.list();
    const noted = await stack.db.pool.query<{ order_id: string }>(
      'SELECT order_id FROM orders WHERE attention IS NOT NULL',
    );
    expect(attention.map((a) => a.order_id).sort()).toEqual(noted.rows.map((r) => r.order_id).sort());
  });

  it('CA-04: a server out of reach is a FlashpayError with code NETWORK (status 0, the key kept), never a bare TypeError', async () => {
    // A port that was just free: nothing listens there.
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, token: undefined, backoffMs: 1 });

    const read = await client.getOrder('ord_x').catch((e: unknown) => e);
    expect(read).toBeInstanceOf(FlashpayError);
    expect(read).toMatchObject({ code: 'NETWORK', status: 0, name: 'FlashpayError' });
    expect((read as FlashpayError).message).toMatch(
      /^NETWORK: GET http:\/\/127\.0\.0\.1:\d+\/v1\/orders\/ord_x: .*ECONNREFUSED.*\(4 attempts\)$/,
    );
    expect((read as FlashpayError).cause).toBeInstanceOf(TypeError);

    const create = await client.createOrder({ sku: 'x' }, { idempotencyKey: 'ca-net-1' }).catch((e: unknown) => e);
    expect(create).toMatchObject({ code: 'NETWORK', idempotencyKey: 'ca-net-1' });
    expect((create as FlashpayError).is('NETWORK')).toBe(true);
    // An unkeyed POST is not retried (it could act twice): one attempt.
    const refund = await client.orders.retry('ord_x').catch((e: FlashpayError) => e.message);
    expect(refund).toMatch(/\(1 attempt\)$/);
    expect(await client.results.getOrder('ord_x').catch((e: FlashpayError) => e.code)).toBe('NETWORK');
    expect(
      await client.skus
        .list()
        .all()
        .catch((e: FlashpayError) => e.code),
    ).toBe('NETWORK');
  });

  it('CA-05: a list’s auto-paging reads `{<items>, next_cursor}` until null, sends the cursor back, and refuses a cursor that does not move', async () => {
    // The SKU list's own shape, served by a scripted server (the real route: tests/client/skus-list.test.ts).
    const asked: string[] = [];
    let stuck = false;
    const server = http.createServer((request, response) => {
      asked.push(request.url ?? '');
      const cursor = new URL(request.url ?? '', 'http://x').searchParams.get('cursor');
      const pages: Record<string, unknown> = {
        '': { skus: [{ sku: 'a' }, { sku: 'b' }], next_cursor: 'c1' },
        c1: { skus: [{ sku: 'c' }], next_cursor: stuck ? 'c1' : 'c2' },
        c2: { skus: [], next_cursor: null },
      };
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(pages[cursor ?? '']));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = createClient({ baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}` });
      expect((await client.skus.list({ pageSize: 2 }).all()).map((s) => s.sku)).toEqual(['a', 'b', 'c']);
      expect(asked).toEqual([
        '/v1/admin/skus?limit=2',
        '/v1/admin/skus?limit=2&cursor=c1',
        '/v1/admin/skus?limit=2&cursor=c2',
      ]);
      stuck = true;
      expect(
        await client.skus
          .list()
          .all()
          .catch((e: Error) => e.message),
      ).toBe('the list did not end: page 2, cursor c1');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
