import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { createSku, eventually, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { startProxy, type CuttableProxy } from '../support/tcp-proxy.ts';

// Proves an error answer tells the truth: "nothing was executed" (503) only when nothing was, and
// once the provider has been called a lost database is answered UNKNOWN, never 503, and converges.
describe('errors that tell the truth', () => {
  let s: PaymentStack;
  let proxy: CuttableProxy;
  let real: TestDatabase;
  beforeAll(async () => {
    real = await freshDatabase();
    const target = new URL(real.url);
    proxy = await startProxy({ host: target.hostname, port: Number(target.port) });
    const pool = createPool(proxy.url(real.url), 10, 1_000);
    // The service reaches its database through the proxy; the test reads it directly.
    s = await startPaymentStack({
      db: { ...real, pool, drop: async () => undefined },
      config: { payTimeoutMs: 5_000 },
    });
  });
  afterAll(async () => {
    await s.close();
    await s.db.pool.end();
    await proxy.close();
    await real.drop();
  });

  it('T-01: the database goes away while the charge is at the provider: the pay is answered UNKNOWN, then converges to PAID', async () => {
    await createSku(s, { sku: 't1', stock: 2 });
    const o = await s.buy('t1-user', 't1');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 800,
    });
    const paying = s.pay(o.token, o.orderId, 't1-pay');
    await eventually(
      () => s.chargeRequests(o.orderId),
      (n) => n === 1,
    );
    proxy.cut();
    const answer = await paying;
    expect([answer.status, answer.body]).toEqual([200, { order_id: o.orderId, status: 'UNKNOWN' }]);
    proxy.restore();

    expect(await s.control('GET', `/charges/${o.orderId}`)).toMatchObject({ status: 'CHARGED' });
    s.clock.advance(60_000);
    // Converges by whichever comes first: recovery's query, or the provider's notification retried.
    await eventually(
      async () => {
        await s.recover(5_000);
        return (await s.order(o.orderId)).status;
      },
      (status) => status === 'PAID',
    );
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['PAID', 'CONFIRMED']);
  });

  it('T-02: the database is away before anything happened: 503 "nothing executed", and the retry executes afresh', async () => {
    await createSku(s, { sku: 't2', stock: 2 });
    const token = await s.token('tenant-a', 't2-user');
    proxy.cut();
    const away = await s.call('POST', '/v1/orders', {
      token,
      body: { sku: 't2' },
      headers: { 'idempotency-key': 't2-key' },
    });
    expect([away.status, away.headers.get('retry-after'), away.body.code, away.body.outcome]).toEqual([
      503,
      '1',
      'UNAVAILABLE',
      undefined,
    ]);
    expect(away.body.detail).toMatch(/nothing was executed/);
    proxy.restore();
    const retry = await s.call('POST', '/v1/orders', {
      token,
      body: { sku: 't2' },
      headers: { 'idempotency-key': 't2-key' },
    });
    expect([retry.status, retry.headers.get('idempotent-replayed')]).toEqual([201, 'false']);
    const counts = await real.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders WHERE sku = 't2'`);
    expect(counts.rows[0]?.n).toBe(1);
  });
});
