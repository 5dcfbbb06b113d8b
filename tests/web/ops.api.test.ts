import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { BIN } from '../support/process.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

// Issue 36: the operator console's API over real HTTP, a real PostgreSQL and the fake provider.

let stack: PaymentStack;
let keys = 0;
const key = (what: string) => `${what}-${++keys}`;

beforeAll(async () => {
  stack = await startPaymentStack();
});
afterAll(async () => {
  await stack?.close();
});

const admin = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
  stack.call(method, path, { token: stack.admin, headers, ...(body === undefined ? {} : { body }) });
/** Issue 48: a refund and a cancel say why. */
const WHY = { reason: 'ops test: buyer asked' };
const refundLines = async (orderId: string) =>
  (await stack.statement()).lines.filter((l) => l.type === 'REFUND' && l.merchant_order === orderId).length;
const actions = async (orderId: string) =>
  (await stack.order(orderId)).timeline.filter((t) => (t as { action?: string }).action) as unknown as Array<{
    action: string;
    operator: string;
  }>;

describe('issue 36: the operator console API', () => {
  it('OP-01: search finds an order by id, buyer, Idempotency-Key and provider txn; pages newest first without gaps or repeats', async () => {
    // Proves the search's matches and its keyset paging; another tenant and a forged cursor see nothing.
    await createSku(stack, { sku: 'op1-a', stock: 20 });
    await createSku(stack, { sku: 'op1-b', stock: 20 });
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      stack.clock.advance(1_000);
      made.push((await stack.buy(`op1-buyer-${i % 3}`, i % 2 ? 'op1-b' : 'op1-a', `op1-key-${i}`)).orderId);
    }
    const ids = (r: { body: { orders: Array<{ order_id: string }> } }) => r.body.orders.map((o) => o.order_id);
    expect(ids(await admin('GET', `/v1/admin/orders?q=${made[3]}`))).toEqual([made[3]]);
    expect(ids(await admin('GET', '/v1/admin/orders?q=op1-buyer-1'))).toEqual([made[4], made[1]]);
    expect(ids(await admin('GET', '/v1/admin/orders?q=op1-key-5'))).toEqual([made[5]]);
    const n = await stack.notify({
      notify_id: 'op1-n',
      merchant_order: made[2],
      kind: 'CHARGED',
      amount: 1990,
      txn: 'txn-op1-xyz',
    });
    expect(n.status).toBe(200);
    expect(ids(await admin('GET', '/v1/admin/orders?q=txn-op1-xyz'))).toEqual([made[2]]);
    expect(ids(await admin('GET', '/v1/admin/orders?q=nobody-at-all'))).toEqual([]);

    // Every order of op1-a, two at a time, newest first: each once, then next_cursor null.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const r = await admin('GET', `/v1/admin/orders?sku=op1-a&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status, r.text).toBe(200);
      seen.push(...ids(r));
      cursor = r.body.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual([made[6], made[4], made[2], made[0]]);
    const paid = await admin('GET', '/v1/admin/orders?sku=op1-a&state=PAID');
    expect(ids(paid)).toEqual([made[2]]);
    expect(paid.body.orders[0]).toMatchObject({ status: 'PAID', user_id: 'op1-buyer-2', amount: 1990, sku: 'op1-a' });

    const bad = await admin('GET', '/v1/admin/orders?cursor=bm90LWEtY3Vyc29y');
    expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION']);
    const other = await stack.token('tenant-other', 'ops', 'admin');
    const foreign = await stack.call('GET', `/v1/admin/orders?q=${made[3]}`, { token: other });
    expect([foreign.status, foreign.body.orders]).toEqual([200, []]);
    const buyer = await stack.token(TENANT, 'op1-buyer-1');
    expect((await stack.call('GET', '/v1/admin/orders', { token: buyer })).status).toBe(403);
  });

  it('OP-02: refund of a PAID order → REFUNDED with one REFUND line at the provider, units back, operator in the timeline; a second call does nothing', async () => {
    // Proves the operator's refund goes through the provider once under the fixed key, and repeats are inert.
    await createSku(stack, { sku: 'op2', stock: 3 });
    const { orderId, token } = await stack.buy('op2-buyer', 'op2');
    expect((await stack.pay(token, orderId)).body.status).toBe('PAID');
    expect(await skuCounters(stack, 'op2')).toMatchObject({ available: 2, confirmed: 1 });

    const k = key('refund');
    const first = await admin('POST', `/v1/admin/orders/${orderId}/refund`, { 'idempotency-key': k }, WHY);
    expect([first.status, first.body]).toEqual([200, { order_id: orderId, status: 'REFUNDED', operator: 'ops' }]);
    expect(first.headers.get('idempotent-replayed')).toBe('false');
    expect((await stack.order(orderId)).status).toBe('REFUNDED');
    expect(await refundLines(orderId)).toBe(1);
    expect(await skuCounters(stack, 'op2')).toMatchObject({ available: 3, confirmed: 0, held: 0 });

    const replay = await admin('POST', `/v1/admin/orders/${orderId}/refund`, { 'idempotency-key': k }, WHY);
    expect([replay.status, replay.text]).toEqual([200, first.text]);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const again = await admin('POST', `/v1/admin/orders/${orderId}/refund`, { 'idempotency-key': key('refund') }, WHY);
    expect([again.status, again.body.code, again.body.order_status]).toEqual([409, 'REJECTED', 'REFUNDED']);
    expect(await refundLines(orderId)).toBe(1);
    expect(await skuCounters(stack, 'op2')).toMatchObject({ available: 3, confirmed: 0 });
    expect(await actions(orderId)).toEqual([expect.objectContaining({ action: 'refund', operator: 'ops' })]);
    const timeline = (await stack.order(orderId)).timeline;
    expect(timeline.find((t) => t.to === 'REFUNDING')?.reason).toBe('refund by operator ops');

    // An unpaid order is refused and the provider is not called.
    const unpaid = await stack.buy('op2-buyer', 'op2');
    const refused = await admin(
      'POST',
      `/v1/admin/orders/${unpaid.orderId}/refund`,
      { 'idempotency-key': key('r') },
      WHY,
    );
    expect([refused.status, refused.body.code, refused.body.order_status]).toEqual([409, 'REJECTED', 'CREATED']);
    expect(await refundLines(unpaid.orderId)).toBe(0);
    const missing = await admin('POST', '/v1/admin/orders/ord_nope/refund', { 'idempotency-key': key('r') }, WHY);
    expect([missing.status, missing.body.code]).toEqual([404, 'ORDER_NOT_FOUND']);
    const nokey = await admin('POST', `/v1/admin/orders/${orderId}/refund`, {}, WHY);
    expect([nokey.status, nokey.body.code]).toEqual([400, 'IDEMPOTENCY_KEY_MISSING']);
  });

  it('OP-03: cancel of an unpaid order → CANCELLED with its units released, operator in the timeline; a paid one is refused', async () => {
    // Proves the operator's cancel releases the held units once and refuses what has been paid.
    await createSku(stack, { sku: 'op3', stock: 2 });
    const { orderId } = await stack.buy('op3-buyer', 'op3');
    expect(await skuCounters(stack, 'op3')).toMatchObject({ available: 1, held: 1 });
    const first = await admin('POST', `/v1/admin/orders/${orderId}/cancel`, { 'idempotency-key': key('c') }, WHY);
    expect([first.status, first.body]).toEqual([200, { order_id: orderId, status: 'CANCELLED', operator: 'ops' }]);
    expect(await skuCounters(stack, 'op3')).toMatchObject({ available: 2, held: 0 });
    const again = await admin('POST', `/v1/admin/orders/${orderId}/cancel`, { 'idempotency-key': key('c') }, WHY);
    expect([again.status, again.body.code, again.body.order_status]).toEqual([409, 'REJECTED', 'CANCELLED']);
    expect(await skuCounters(stack, 'op3')).toMatchObject({ available: 2, held: 0 });
    expect(await actions(orderId)).toEqual([expect.objectContaining({ action: 'cancel', operator: 'ops' })]);

    const paid = await stack.buy('op3-buyer', 'op3');
    expect((await stack.pay(paid.token, paid.orderId)).body.status).toBe('PAID');
    const refused = await admin(
      'POST',
      `/v1/admin/orders/${paid.orderId}/cancel`,
      { 'idempotency-key': key('c') },
      WHY,
    );
    expect([refused.status, refused.body.code, refused.body.order_status]).toEqual([409, 'REJECTED', 'PAID']);
    expect((await stack.order(paid.orderId)).status).toBe('PAID');
    expect(await skuCounters(stack, 'op3')).toMatchObject({ available: 1, confirmed: 1 });
  });

  it('OP-04: a note is listed with since and attempts until acknowledged (operator recorded once); an order that converged is not listed without one', async () => {
    // Proves the attention list's one rule: open = unacknowledged and the order has not moved since.
    await createSku(stack, { sku: 'op4', stock: 3 });
    const listed = async () =>
      ((await admin('GET', '/v1/admin/attention')).body.orders as Array<{ order_id: string }>).map((o) => o.order_id);

    // A PAID order told it was declined: it stays PAID, a person must look.
    const a = await stack.buy('op4-buyer', 'op4');
    expect((await stack.pay(a.token, a.orderId)).body.status).toBe('PAID');
    await stack.notify({ notify_id: 'op4-r', merchant_order: a.orderId, kind: 'DECLINED', amount: 1990 });
    const item = (await admin('GET', '/v1/admin/attention')).body.orders.find(
      (o: { order_id: string }) => o.order_id === a.orderId,
    );
    expect(item).toMatchObject({
      status: 'PAID',
      reason: expect.stringMatching(/declined for a PAID order$/),
      attempts: 0,
    });
    expect(Date.parse(item.since)).not.toBeNaN();
    const ack = await admin('POST', `/v1/admin/attention/${a.orderId}/ack`);
    expect(ack.status).toBe(200);
    expect(ack.body).toMatchObject({ order_id: a.orderId, acknowledged_by: 'ops', status: 'PAID' });
    expect(await listed()).not.toContain(a.orderId);
    const twice = await admin('POST', `/v1/admin/attention/${a.orderId}/ack`);
    expect([twice.status, twice.body.acknowledged_at]).toEqual([200, ack.body.acknowledged_at]);
    expect(await actions(a.orderId)).toEqual([expect.objectContaining({ action: 'ack', operator: 'ops' })]);

    // A wrong amount leaves a note on an unpaid order; the right charge then converges it to PAID.
    const b = await stack.buy('op4-buyer', 'op4');
    await stack.notify({ notify_id: 'op4-x', merchant_order: b.orderId, kind: 'CHARGED', amount: 1 });
    expect(await listed()).toContain(b.orderId);
    await stack.notify({ notify_id: 'op4-y', merchant_order: b.orderId, kind: 'CHARGED', amount: 1990 });
    expect((await stack.order(b.orderId)).status).toBe('PAID');
    expect(await listed()).not.toContain(b.orderId);

    const none = await stack.buy('op4-buyer', 'op4');
    const nothing = await admin('POST', `/v1/admin/attention/${none.orderId}/ack`);
    expect([nothing.status, nothing.body.code]).toEqual([409, 'REJECTED']);
    const other = await stack.token('tenant-other', 'ops', 'admin');
    const hidden = await stack.call('POST', `/v1/admin/attention/${a.orderId}/ack`, { token: other });
    expect([hidden.status, hidden.body.code]).toEqual([404, 'ORDER_NOT_FOUND']);
  });

  it('OP-05: the deep links serve the console page; `flashpay token --console` prints a sign-in link with a short-lived admin token in the fragment', async () => {
    // Proves /ops/orders/{id} and /ops/skus/{sku} are the console (200 HTML, its CSP), and the CLI's link signs in.
    for (const url of ['/ops/orders/ord_x1', '/ops/skus/tee-black-m']) {
      const response = await fetch(`${stack.url}${url}`);
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/html');
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await response.text()).toContain('/web/ops.js');
    }
    const secret = 'op5-jwt-secret-of-at-least-32-bytes-long';
    const run = spawnSync(
      process.execPath,
      [BIN, 'token', '--tenant', TENANT, '--user', 'ops-anna', '--console', '--url', 'http://console.test:8080/'],
      { env: { ...process.env, FLASHPAY_JWT_SECRET: secret }, encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const link = /^http:\/\/console\.test:8080\/ops#token=([\w.-]+)\n$/.exec(run.stdout);
    expect(link, run.stdout).not.toBeNull();
    const principal = await tokenSigner(secret).verify(link?.[1] ?? '');
    expect(principal).toMatchObject({ tenantId: TENANT, userId: 'ops-anna', scope: 'admin' });
    const [, payload = ''] = (link?.[1] ?? '').split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { exp: number; iat: number };
    expect(claims.exp - claims.iat).toBe(900);
  });

  it('OP-06: an UNKNOWN order resolved by hand with a receipt → PAID, units confirmed, receipt and operator in the timeline; other states refused', async () => {
    // Proves the hand resolution goes through the decider like a query's answer and is audited; no provider call is made.
    await createSku(stack, { sku: 'op6', stock: 2 });
    const { orderId, token } = await stack.buy('op6-buyer', 'op6');
    await stack.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    await stack.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: orderId,
      ms: 1_500,
    });
    expect((await stack.pay(token, orderId)).body.status).toBe('UNKNOWN');
    const body = { outcome: 'CHARGED', receipt: 'txn seen on the dashboard #4411' };
    const resolve = (k: string, b: unknown = body, id = orderId) =>
      stack.call('POST', `/v1/admin/orders/${id}/resolve`, {
        token: stack.admin,
        body: b,
        headers: { 'idempotency-key': k },
      });
    const k = key('resolve');
    const first = await resolve(k);
    expect([first.status, first.body]).toEqual([200, { order_id: orderId, status: 'PAID', operator: 'ops' }]);
    expect(await skuCounters(stack, 'op6')).toMatchObject({ available: 1, confirmed: 1, held: 0 });
    const view = await stack.order(orderId);
    expect(view.timeline.find((t) => t.to === 'PAID')?.reason).toBe(
      'resolved by operator ops (receipt txn seen on the dashboard #4411)',
    );
    expect(await actions(orderId)).toEqual([expect.objectContaining({ action: 'resolve', operator: 'ops' })]);
    expect((await resolve(k)).headers.get('idempotent-replayed')).toBe('true');
    const again = await resolve(key('resolve'));
    expect([again.status, again.body.code, again.body.order_status]).toEqual([409, 'REJECTED', 'PAID']);
    const reused = await resolve(k, { outcome: 'NOT_CHARGED', receipt: 'x' });
    expect([reused.status, reused.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    const bad = await resolve(key('resolve'), { outcome: 'MAYBE', receipt: 'x' });
    expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION']);
    expect(await actions(orderId)).toHaveLength(1);
    await stack.control('POST', '/_control/callbacks', { mode: 'AUTO' });
  });

  it('OP-07: a SKU change sent with an Idempotency-Key (as the console does) adds stock once however often it is sent', async () => {
    // Proves the SKU page's "Add stock" is safe to send twice; without a key the route behaves as before.
    await createSku(stack, { sku: 'op7', stock: 10 });
    const patch = (body: unknown, headers: Record<string, string> = {}) =>
      stack.call('PATCH', '/v1/admin/skus/op7', { token: stack.admin, body, headers });
    const k = key('sku');
    const first = await patch({ add_stock: 5 }, { 'idempotency-key': k });
    expect([first.status, first.body.total, first.headers.get('idempotent-replayed')]).toEqual([200, 15, 'false']);
    const again = await patch({ add_stock: 5 }, { 'idempotency-key': k });
    expect([again.status, again.text, again.headers.get('idempotent-replayed')]).toEqual([200, first.text, 'true']);
    expect(await skuCounters(stack, 'op7')).toMatchObject({ total: 15, available: 15 });
    const reused = await patch({ add_stock: 6 }, { 'idempotency-key': k });
    expect([reused.status, reused.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    expect((await patch({ add_stock: 1 })).body.total).toBe(16);
    const tooMany = await patch({ add_stock: 100_000_000 }, { 'idempotency-key': key('sku') });
    expect([tooMany.status, tooMany.body.code]).toEqual([400, 'VALIDATION']);
    expect(await skuCounters(stack, 'op7')).toMatchObject({ total: 16 });
  });
});
