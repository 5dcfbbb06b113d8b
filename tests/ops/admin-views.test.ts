import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { staleFloorMs } from '../../src/recovery/index.ts';
import { createSku, startPaymentStack, TENANT, unknownOrder, type PaymentStack } from '../support/payments.ts';

// Issue 52: the on-call engineer's two reads over real HTTP, a real PostgreSQL and the fake
// provider — every SKU with its counters and outcomes, and why an unfinished order is stuck.

let stack: PaymentStack;
beforeAll(async () => {
  stack = await startPaymentStack();
});
afterAll(async () => {
  await stack?.close();
});

const admin = (path: string, token = stack.admin) => stack.call('GET', path, { token });

interface SkuPage {
  skus: Array<Record<string, unknown> & { sku: string; orders: Record<string, number> }>;
  next_cursor: string | null;
}

describe('issue 52: the admin SKU list and the order’s recovery', () => {
  it('AV-01: GET /v1/admin/skus lists the tenant’s SKUs with counters and order outcomes, keyset-paged; another tenant sees its own only', async () => {
    // Proves the list answers "sold, paid, refunded" per SKU from the same counters as the single-SKU view.
    await createSku(stack, { sku: 'av1-a', stock: 5, per_user_limit: 2 });
    await createSku(stack, { sku: 'av1-b', stock: 3 });
    await createSku(stack, { sku: 'av1-c', stock: 1 });
    await createSku(stack, { sku: 'av1-z', stock: 9 }, 'av1-other');
    const paid = await stack.buy('alice', 'av1-a');
    expect((await stack.pay(paid.token, paid.orderId)).body.status).toBe('PAID');
    const refunded = await stack.buy('bob', 'av1-a');
    expect((await stack.pay(refunded.token, refunded.orderId)).body.status).toBe('PAID');
    const refund = await stack.call('POST', `/v1/admin/orders/${refunded.orderId}/refund`, {
      token: stack.admin,
      headers: { 'idempotency-key': 'av1-refund' },
      body: { reason: 'AV-01 refund' },
    });
    expect(refund.body.status).toBe('REFUNDED');
    await stack.buy('carol', 'av1-a'); // CREATED: one unit held

    const first = await admin('/v1/admin/skus?limit=2');
    expect(first.status).toBe(200);
    const page1 = first.body as SkuPage;
    expect(page1.skus).toEqual([
      {
        tenant_id: TENANT,
        sku: 'av1-a',
        name: 'SKU av1-a',
        price: 1990,
        per_user_limit: 2,
        hold_ttl_ms: 60000,
        total: 5,
        available: 3,
        held: 1,
        confirmed: 1,
        released: 1, // the refunded order's unit, back on sale
        refunded_shipped: 0,
        orders: { CREATED: 1, PAID: 1, REFUNDED: 1 },
      },
      {
        tenant_id: TENANT,
        sku: 'av1-b',
        name: 'SKU av1-b',
        price: 1990,
        per_user_limit: null,
        hold_ttl_ms: 60000,
        total: 3,
        available: 3,
        held: 0,
        confirmed: 0,
        released: 0,
        refunded_shipped: 0,
        orders: {},
      },
    ]);
    expect(page1.next_cursor).toEqual(expect.any(String));
    const page2 = (await admin(`/v1/admin/skus?limit=2&cursor=${page1.next_cursor}`)).body as SkuPage;
    expect(page2.skus.map((s) => s.sku)).toEqual(['av1-c']);
    expect(page2.next_cursor).toBeNull();
    // The default page holds all three; the single-SKU view agrees with the list.
    const all = (await admin('/v1/admin/skus')).body as SkuPage;
    expect(all.skus.map((s) => s.sku)).toEqual(['av1-a', 'av1-b', 'av1-c']);
    const listed = { ...all.skus[0] };
    delete listed.orders;
    delete listed.tenant_id;
    expect((await admin('/v1/admin/skus/av1-a')).body).toEqual(listed);
    expect((await admin('/v1/admin/skus/av1-a/outcomes')).body.statuses).toEqual(all.skus[0]?.orders);

    const other = await stack.token('av1-other', 'ops', 'admin');
    expect(((await admin('/v1/admin/skus', other)).body as SkuPage).skus.map((s) => [s.tenant_id, s.sku])).toEqual([
      ['av1-other', 'av1-z'],
    ]);
    // An operator sees every tenant, in (tenant, sku) order.
    const everyone = ((await admin('/v1/admin/skus?limit=100', stack.operator)).body as SkuPage).skus.map(
      (s) => `${s.tenant_id}/${s.sku}`,
    );
    expect(everyone.filter((s) => s.includes('av1-'))).toEqual([
      'av1-other/av1-z',
      `${TENANT}/av1-a`,
      `${TENANT}/av1-b`,
      `${TENANT}/av1-c`,
    ]);
  });

  it('AV-02: a cursor the server did not give, or a limit out of range, is 400 VALIDATION naming the field', async () => {
    // Proves the cursor is decoded and checked before anything is read.
    const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
    const bad = [
      'not-a-cursor',
      b64('["acme"]'),
      b64('["acme", 7]'),
      b64('{"tenant":"acme","sku":"x"}'),
      b64(`["acme", "x' OR 1=1 --"]`),
      b64('["", "tee"]'),
    ];
    for (const cursor of bad) {
      const r = await admin(`/v1/admin/skus?cursor=${cursor}`);
      expect([cursor, r.status, r.body.code]).toEqual([cursor, 400, 'VALIDATION']);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    for (const limit of ['0', '101', 'abc', '-1']) {
      const r = await admin(`/v1/admin/skus?limit=${limit}`);
      expect([limit, r.status, r.body.code]).toEqual([limit, 400, 'VALIDATION']);
    }
    const unauthenticated = await stack.call('GET', '/v1/admin/skus');
    expect(unauthenticated.status).toBe(401);
  });

  it('AV-03: an UNKNOWN order’s view says how many passes tried it, what the provider last said and when the next pass will; converged, the block is null', async () => {
    // Proves the recovery block follows recovery's own bookkeeping pass by pass (migration 191).
    await createSku(stack, { sku: 'av3', stock: 2 });
    // The charge's answer is lost and its notification held: only recovery can learn the outcome.
    await stack.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const { orderId } = await unknownOrder(stack, 'dave', 'av3', 1_500);
    const view = async () => (await admin(`/v1/admin/orders/${orderId}`)).body;
    const before = await view();
    expect(before.status).toBe('UNKNOWN');
    const interval = stack.deps.config.recoveryIntervalMs;
    // Not tried yet: the next pass takes it within one interval of now.
    expect(before.recovery).toEqual({
      by: 'recovery',
      attempts: 0,
      last_error: null,
      last_attempt_at: null,
      next_attempt_at: new Date(stack.clock.now().getTime() + interval).toISOString(),
    });

    const floor = staleFloorMs(stack.deps.config);
    const failingPass = async () => {
      await stack.control('POST', '/_control/faults', {
        op: 'query',
        kind: 'ERROR_500',
        merchant_order: orderId,
        times: 1,
      });
      const run = await stack.call('POST', '/v1/admin/recovery/run', {
        token: stack.admin,
        body: { stale_after_ms: floor },
      });
      expect(run.status).toBe(200);
    };
    await failingPass();
    const once = await view();
    const at1 = stack.clock.now();
    expect(once.status).toBe('UNKNOWN');
    expect(once.recovery).toEqual({
      by: 'recovery',
      attempts: 1,
      last_error: expect.stringMatching(/500/),
      last_attempt_at: at1.toISOString(),
      // Within its free retries: the next pass, one interval later.
      next_attempt_at: new Date(at1.getTime() + interval).toISOString(),
    });
    expect(once.recovery_attempts).toBe(1);

    // Past the free retries the order backs off, doubling: by the 8th miss its backoff (8-16 s)
    // outlasts the pass interval, and the view's next attempt is the backoff the claim obeys.
    for (let i = 0; i < 7; i++) {
      stack.clock.advance(10 * 60_000);
      await failingPass();
    }
    const backedOff = await view();
    expect(backedOff.recovery.attempts).toBe(8);
    expect(backedOff.recovery.last_attempt_at).toBe(stack.clock.now().toISOString());
    expect(backedOff.recovery.last_error).toMatch(/500/);
    const column = await stack.deps.db.query<{ next_recovery_at: Date }>(
      'SELECT next_recovery_at FROM orders WHERE order_id = $1',
      [orderId],
    );
    expect(backedOff.recovery.next_attempt_at).toBe(column.rows[0]?.next_recovery_at.toISOString());
    expect(Date.parse(backedOff.recovery.next_attempt_at)).toBeGreaterThan(stack.clock.now().getTime() + interval);
    // A pass before the backoff leaves it alone: nothing changes in the view.
    const early = await stack.call('POST', '/v1/admin/recovery/run', {
      token: stack.admin,
      body: { stale_after_ms: floor },
    });
    expect(early.status).toBe(200);
    expect((await view()).recovery).toEqual(backedOff.recovery);

    // The provider answers again: after the backoff the next pass converges it and the block is gone.
    stack.clock.set(new Date(Date.parse(backedOff.recovery.next_attempt_at) + 1));
    expect(await stack.control('GET', '/_control/faults')).toEqual([]);
    await stack.call('POST', '/v1/admin/recovery/run', { token: stack.admin, body: { stale_after_ms: floor } });
    const done = await view();
    expect([done.status, done.recovery, done.recovery_attempts]).toEqual(['PAID', null, 0]);
    const rows = await stack.deps.db.query('SELECT count(*)::int AS n FROM recovery_attempts WHERE order_id = $1', [
      orderId,
    ]);
    expect(rows.rows[0]).toEqual({ n: 0 });
    await stack.control('POST', '/_control/callbacks', { mode: 'AUTO' });
  });

  it('AV-04: a finished order’s view has recovery null, and the document describes the block', async () => {
    // Proves the block is part of the served OpenAPI document (responses here are validated against it).
    await createSku(stack, { sku: 'av4', stock: 1 });
    const { orderId, token } = await stack.buy('erin', 'av4');
    expect((await admin(`/v1/admin/orders/${orderId}`)).body.recovery).toBeNull(); // CREATED: not unfinished
    expect((await stack.pay(token, orderId)).body.status).toBe('PAID');
    expect((await admin(`/v1/admin/orders/${orderId}`)).body.recovery).toBeNull();
    const doc = (await stack.call('GET', '/docs/json')).body;
    const view = doc.paths['/v1/admin/orders/{id}'].get.responses['200'].content['application/json'].schema;
    expect(Object.keys(view.properties)).toContain('recovery');
    expect(doc.paths['/v1/admin/skus'].get.operationId).toBe('adminListSkus');
  });
});
