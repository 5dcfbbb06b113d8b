import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config.ts';
import { DEFAULT_PAY_TIMEOUT_MS, payTimeoutOf } from '../../src/platform/provider.config.ts';
import { countRows } from '../support/stack.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';
import { LOST_REPLY_TIMEOUT_MS } from '../support/providers/index.ts';

// Issue 48, "each provider's own rules": the pay timeout is the provider's own (the fake channel's
// 300 ms, Stripe's and Alipay's 10 s) unless FLASHPAY_PAY_TIMEOUT_MS sets one for all; an order
// total past the tenant's provider's maximum is refused at creation; a provider's refusal of an
// amount is a decline (FAILED, units back), not an unknown. Real PostgreSQL, the official SDKs
// against the doubles over real HTTP.

const STRIPE_MAX = 99_999_999;
const ALIPAY_MAX = 10_000_000_000;

/**
 * An order created before its tenant moved to this provider (or before the maximum was checked):
 * its total is past the provider's maximum. Planted in the database, as no create path allows it now.
 */
async function plantAmount(s: PaymentStack, orderId: string, amount: number) {
  await s.db.pool.query('UPDATE orders SET amount = $2 WHERE order_id = $1', [orderId, amount]);
}

describe('the pay timeout is each provider’s own', () => {
  it('PR-01 defaults: fake 300 ms, Stripe and Alipay 10 s; FLASHPAY_PAY_TIMEOUT_MS overrides every provider', () => {
    // Proves the configuration's reading: no variable → per provider; the variable → the same for all.
    const byDefault = loadConfig({});
    expect(byDefault.payTimeoutMs).toBeUndefined();
    expect([
      payTimeoutOf(byDefault, 'fake'),
      payTimeoutOf(byDefault, 'stripe'),
      payTimeoutOf(byDefault, 'alipay'),
    ]).toEqual([300, 10_000, 10_000]);
    expect(DEFAULT_PAY_TIMEOUT_MS.stripe).toBeGreaterThanOrEqual(10_000);
    const set = loadConfig({ FLASHPAY_PAY_TIMEOUT_MS: '2500' });
    expect([payTimeoutOf(set, 'fake'), payTimeoutOf(set, 'stripe'), payTimeoutOf(set, 'alipay')]).toEqual([
      2500, 2500, 2500,
    ]);
    expect(() => loadConfig({ FLASHPAY_PAY_TIMEOUT_MS: '0' })).toThrow(/FLASHPAY_PAY_TIMEOUT_MS/);
  });

  describe('a Stripe pay that takes 2 s', () => {
    let s: PaymentStack;
    beforeAll(async () => {
      // No payTimeoutMs: the stack runs with Stripe's own timeout, as `flashpay start` would.
      s = await startPaymentStack({ provider: 'stripe' });
    });
    afterAll(async () => s.close());

    it('PR-02 is PAID, not UNKNOWN: Stripe is not held to the fake channel’s 300 ms', async () => {
      // Proves the adapter is built with Stripe's timeout: at 300 ms this pay would answer UNKNOWN.
      await createSku(s, { sku: 'pr2', stock: 1 });
      await s.control('POST', '/_control/callbacks', { mode: 'HOLD' }); // the pay's own answer decides
      const o = await s.buy('pr2-u', 'pr2');
      await s.control('POST', '/_control/faults', {
        op: 'charge',
        kind: 'DELAY_RESPONSE',
        merchant_order: o.orderId,
        ms: 2_000,
      });
      expect((await s.pay(o.token, o.orderId)).body).toEqual({ order_id: o.orderId, status: 'PAID' });
      expect(await s.chargeRequests(o.orderId)).toBe(1);
    });
  });
});

describe.each([
  ['stripe', STRIPE_MAX],
  ['alipay', ALIPAY_MAX],
] as const)('the maximum order total of a %s tenant', (provider, maximum) => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({
      provider,
      config: { payTimeoutMs: LOST_REPLY_TIMEOUT_MS * 10, rateLimitPerMinute: 0 },
    });
  });
  afterAll(async () => s.close());
  const order = (token: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
    s.call('POST', '/v1/orders', { token, body, headers: { 'idempotency-key': key, ...headers } });

  it(`PR-03 [${provider}] a total past ${maximum} is 400 AMOUNT_TOO_LARGE on every create path, and nothing is written`, async () => {
    // Proves the check per provider on the batched one-line path, the keyed path of several lines and
    // the queued path, and that a refusal leaves no order, line, hold, stock request or key behind.
    const p = `pr3${provider}`;
    await createSku(s, { sku: `${p}-top`, price: maximum, stock: 10 });
    await createSku(s, { sku: `${p}-one`, price: 1, stock: 10 });
    const buyer = await s.token(TENANT, `${p}-u`);
    const before = [await skuCounters(s, `${p}-top`), await skuCounters(s, `${p}-one`)];
    const refused = [
      await order(buyer, `${p}-q2`, { sku: `${p}-top`, quantity: 2 }),
      await order(buyer, `${p}-lines`, { lines: [{ sku: `${p}-top` }, { sku: `${p}-one` }] }),
      await order(
        buyer,
        `${p}-async`,
        { lines: [{ sku: `${p}-top` }, { sku: `${p}-one` }] },
        { prefer: 'respond-async' },
      ),
    ];
    for (const reply of refused)
      expect([reply.status, reply.headers.get('content-type'), reply.body.code, reply.body.maximum]).toEqual([
        400,
        'application/problem+json; charset=utf-8',
        'AMOUNT_TOO_LARGE',
        maximum,
      ]);
    expect(refused[1]?.body.amount).toBe(String(maximum + 1));
    expect(await countRows(s.db, 'orders', 'user_id = $1', [`${p}-u`])).toBe(0);
    expect(await countRows(s.db, 'idempotency_keys', 'user_id = $1', [`${p}-u`])).toBe(0);
    expect(await countRows(s.db, 'reservations', 'user_id = $1', [`${p}-u`])).toBe(0);
    expect([await skuCounters(s, `${p}-top`), await skuCounters(s, `${p}-one`)]).toEqual(before);
    // Exactly the maximum: created, and the provider takes it.
    const fits = await order(buyer, `${p}-fits`, { sku: `${p}-top` });
    expect([fits.status, fits.body.amount]).toEqual([201, maximum]);
    const paid = await s.pay(buyer, fits.body.order_id as string);
    expect([paid.status, paid.body.status], paid.text).toEqual([200, 'PAID']);
  });

  it(`PR-04 [${provider}] the provider refuses an amount past its maximum: DECLINED → FAILED, the unit back on sale, the reason says why`, async () => {
    // Proves amount_too_large / ACQ.TOTAL_FEE_EXCEED is a definitive refusal, not a lost answer:
    // no UNKNOWN, no recovery, the hold released at once.
    const p = `pr4${provider}`;
    await createSku(s, { sku: p, price: 1990, stock: 1 });
    const o = await s.buy(`${p}-u`, p);
    await plantAmount(s, o.orderId, maximum + 1);
    const paid = await s.pay(o.token, o.orderId);
    expect([paid.status, paid.body.status], paid.text).toEqual([200, 'FAILED']);
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['FAILED', 'RELEASED']);
    expect(view.timeline.at(-1)?.reason).toMatch(
      provider === 'stripe'
        ? /more than Stripe accepts.*\(amount_too_large\)/
        : /more than Alipay accepts.*\(ACQ\.TOTAL_FEE_EXCEED\)/,
    );
    expect(await skuCounters(s, p)).toMatchObject({ available: 1, held: 0 });
    expect((await s.statement()).lines.filter((l) => l.merchant_order === o.orderId)).toEqual([]);
  });
  it(`PR-06 [${provider}] a price raised by another instance past the maximum: the stale cache does not let a batch through`, async () => {
    // Proves the one-line group commit's own check on the price it reads: this process's SKU
    // definition cache still holds the old price, the batch reads the new one and sends the buyer
    // to the one-buyer path, which refuses.
    const p = `pr6${provider}`;
    await createSku(s, { sku: p, price: 1990, stock: 5 });
    const first = await s.token(TENANT, `${p}-a`);
    expect((await order(first, `${p}-a`, { sku: p })).status).toBe(201); // the cache learns 1990
    await s.db.pool.query('UPDATE skus SET price = $2 WHERE tenant_id = $1 AND sku = $3', [TENANT, maximum + 1, p]);
    const buyer = await s.token(TENANT, `${p}-b`);
    const refused = await order(buyer, `${p}-b`, { sku: p });
    expect([refused.status, refused.body.code, refused.body.maximum], refused.text).toEqual([
      400,
      'AMOUNT_TOO_LARGE',
      maximum,
    ]);
    expect(await countRows(s.db, 'orders', 'user_id = $1', [`${p}-b`])).toBe(0);
    expect(await countRows(s.db, 'idempotency_keys', 'user_id = $1', [`${p}-b`])).toBe(0);
    expect(await skuCounters(s, p)).toMatchObject({ available: 4, held: 1 });
  });
});

describe('the fake channel’s maximum', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ provider: 'fake', config: { payTimeoutMs: 2_000 } });
  });
  afterAll(async () => s.close());

  it('PR-05 a fake-channel tenant may place a total past Stripe’s and Alipay’s maximum (its own is 10^12)', async () => {
    // Proves the maximum is the tenant's provider's, not the smallest of all.
    await createSku(s, { sku: 'pr5', price: ALIPAY_MAX + 1, stock: 1 });
    const buyer = await s.token(TENANT, 'pr5-u');
    const created = await s.call('POST', '/v1/orders', {
      token: buyer,
      body: { sku: 'pr5' },
      headers: { 'idempotency-key': 'pr5' },
    });
    expect([created.status, created.body.amount]).toEqual([201, ALIPAY_MAX + 1]);
  });
});
