import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelClient } from '../../src/payments/channel.client.ts';
import { skuCounters } from '../support/fixtures.ts';
import {
  convergeWithoutClose,
  markPaidIgnoringConfirm,
  payTreatingTimeoutAsFailure,
  unguardedMarkPaid,
} from '../support/broken.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

// Each negative control removes one safeguard in a test-only way and shows the damage seed 000
// shows; the same scenario through the real code is the contrast. A safeguard whose removal
// changes nothing would not be worth its code.
describe('negative controls: the safeguards matter', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  const client = () => channelClient(s.channel.url, 300);
  const chargeFor = async (orderId: string) =>
    (await s.statement()).lines.filter((l) => l.merchant_order === orderId && l.type === 'CHARGE');
  const paidSum = async (sku: string) =>
    (
      await s.db.pool.query<{ n: number }>(
        `SELECT coalesce(sum(amount), 0)::int AS n FROM orders WHERE sku = $1 AND status = 'PAID'`,
        [sku],
      )
    ).rows[0]?.n;

  it('C29-14 without UNKNOWN: a timeout read as failure leaves a charge behind a FAILED order and the unit sold twice over', async () => {
    await createSku(s, { sku: 'x14', stock: 1 });
    const victim = await s.buy('v14', 'x14');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: victim.orderId,
      ms: 500,
    });
    await payTreatingTimeoutAsFailure(s.db.pool, client(), victim.orderId, s.deps.notifyUrl, s.clock.now());
    const other = await s.buy('o14', 'x14'); // the released unit goes to somebody else
    expect((await s.pay(other.token, other.orderId)).body.status).toBe('PAID');
    expect((await s.order(victim.orderId)).status).toBe('FAILED');
    expect(await chargeFor(victim.orderId)).toHaveLength(1); // CHARGED_BUT_FAILED
    expect(await paidSum('x14')).toBe(1990);
    const net = (await s.statement()).lines
      .filter((l) => [victim.orderId, other.orderId].includes(l.merchant_order))
      .reduce((sum, l) => sum + l.amount, 0);
    expect(net).toBe(3980); // channel_net 3980 != paid_sum 1990

    // Contrast: the real pay keeps the order UNKNOWN and the unit HELD; nobody else can take it.
    await createSku(s, { sku: 'x14ok', stock: 1 });
    const real = await s.buy('r14', 'x14ok');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: real.orderId,
      ms: 500,
    });
    expect((await s.pay(real.token, real.orderId)).body.status).toBe('UNKNOWN');
    expect(
      (
        await s.call('POST', '/v1/orders', {
          token: other.token,
          body: { sku: 'x14ok' },
          headers: { 'idempotency-key': 'late-x14ok' },
        })
      ).body.code,
    ).toBe('SOLD_OUT');
  });

  it('C29-15 without close: NOT_FOUND read as failure, and the lingering charge lands behind a FAILED order', async () => {
    await createSku(s, { sku: 'x15', stock: 2 });
    const o = await s.buy('v15', 'x15');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_REQUEST',
      merchant_order: o.orderId,
      ms: 800,
    });
    const started = Date.now();
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    await convergeWithoutClose(s.db.pool, client(), o.orderId, s.clock.now());
    await sleep(Math.max(0, 1000 - (Date.now() - started))); // the request lingers 800 ms in the channel
    expect((await s.order(o.orderId)).status).toBe('FAILED');
    expect(await chargeFor(o.orderId)).toHaveLength(1); // CHARGED_BUT_FAILED
  });

  it('C29-16 without the prior-state guard: a late CHARGED turns a REFUNDED order back into PAID', async () => {
    await createSku(s, { sku: 'x16', stock: 1, hold_ttl_ms: 1000 });
    const o = await s.buy('v16', 'x16');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 400,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    s.clock.advance(2000);
    await s.call('POST', '/v1/admin/expiry/run', { token: s.admin });
    await s.buy('o16', 'x16');
    await s.recover();
    expect((await s.order(o.orderId)).status).toBe('REFUNDED');
    // Contrast first: the real entry point records DUPLICATE and changes nothing.
    expect(
      (await s.notify({ notify_id: 'late-16', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990 })).body.effect,
    ).toBe('DUPLICATE');
    await unguardedMarkPaid(s.db.pool, o.orderId);
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['PAID', 'RELEASED']); // PAID_BUT_REFUNDED
    expect((await s.statement()).lines.filter((l) => l.merchant_order === o.orderId).map((l) => l.type)).toEqual([
      'CHARGE',
      'REFUND',
    ]);
    expect((await skuCounters(s, 'x16')).confirmed).toBe(0); // confirmed 0 != paid 1
  });

  it('C29-17 ignoring the confirm result: late successes oversell — PAID 20 for 10 units', async () => {
    await createSku(s, { sku: 'x17', stock: 10, hold_ttl_ms: 1000 });
    const originals = await Promise.all(Array.from({ length: 10 }, (_, i) => s.buy(`v17-${i}`, 'x17')));
    s.clock.advance(2000);
    await s.call('POST', '/v1/admin/expiry/run', { token: s.admin });
    for (let i = 0; i < 10; i++) {
      const fresh = await s.buy(`n17-${i}`, 'x17');
      expect((await s.pay(fresh.token, fresh.orderId)).body.status).toBe('PAID');
    }
    for (const o of originals) await markPaidIgnoringConfirm(s.db.pool, o.orderId, s.clock.now());
    const paid = (
      await s.db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM orders WHERE sku = 'x17' AND status = 'PAID'`,
      )
    ).rows[0]?.n;
    expect(paid).toBe(20);
    expect((await skuCounters(s, 'x17')).confirmed).toBe(10); // confirmed 10 != paid 20: oversold
  });
});
