import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

describe('outbox and fulfillment through the admin API', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
  });
  afterAll(async () => s.close());

  it("drain delivers a PAID order's event to the built-in consumer once; a second drain has nothing to do", async () => {
    // Proves the wiring of `flashpay start`: outbox → relay → signed webhook → fulfillment, shipped once.
    await createSku(s, { sku: 'ev', stock: 2 });
    const o = await s.buy('ev-user', 'ev');
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('PAID');
    const missing = await s.call('GET', `/v1/admin/fulfillment/${o.orderId}`, { token: s.admin });
    expect([missing.status, missing.body.code]).toEqual([404, 'NOT_FOUND']);
    // Draining acts on every tenant's events: a tenant's admin is refused, an operator drains.
    expect((await s.call('POST', '/v1/admin/outbox/drain', { token: s.admin })).body).toMatchObject({
      status: 403,
      code: 'FORBIDDEN',
    });
    const drained = await s.call('POST', '/v1/admin/outbox/drain', { token: s.operator });
    expect(drained.body).toEqual({ delivered: 1, failed: 0 });
    const view = await s.call('GET', `/v1/admin/fulfillment/${o.orderId}`, { token: s.admin });
    expect(view.body).toMatchObject({
      order_id: o.orderId,
      ship_count: 1,
      last_version: 3,
      arrivals: [{ event_type: 'ORDER_PAID', version: 3, effect: 'APPLIED' }],
    });
    expect((await s.call('POST', '/v1/admin/outbox/drain', { token: s.operator })).body).toEqual({
      delivered: 0,
      failed: 0,
    });
    expect((await s.call('GET', '/v1/admin/outbox/dead', { token: s.admin })).body).toEqual({ events: [] });
    const otherTenant = await s.token('tenant-z', 'ops', 'admin');
    expect((await s.call('GET', `/v1/admin/fulfillment/${o.orderId}`, { token: otherTenant })).status).toBe(404);
    expect((await s.call('POST', '/v1/admin/outbox/drain', { token: o.token })).status).toBe(403);
  });
});
