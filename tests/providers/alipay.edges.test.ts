import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billCsv, zipOne } from '../../src/channel/dialects/alipay.wire.ts';
import { billText, parseBill } from '../../src/payments/providers/alipay.bill.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { alipayNotifyForm, appSdk } from '../support/providers/alipay.ts';

// Alipay's edges: the notify route without Alipay in use, the bill parser alone, and gateway
// answers that say nothing (a 500, a reset). Real HTTP against the double, real PostgreSQL.

describe('Alipay where no tenant pays through it, and its bill read alone', () => {
  it('AP-08 the notify route answers 404 PROVIDER_NOT_CONFIGURED when no tenant uses Alipay', async () => {
    // Proves the route is always there (documented) but inert without Alipay credentials in use.
    const s = await startPaymentStack({ provider: 'fake' });
    try {
      const form = alipayNotifyForm({
        notify_id: 'ap8',
        merchant_order: 'ord_x',
        kind: 'CHARGED',
        amount: 1990,
        txn: 't',
      });
      const answer = await s.call('POST', '/v1/providers/alipay/notify', {
        rawBody: form,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect([answer.status, answer.body?.code]).toEqual([404, 'PROVIDER_NOT_CONFIGURED']);
    } finally {
      await s.close();
    }
  });

  it('AP-09 the bill parser reads the zip and a plain CSV alike: 交易 → CHARGE, 退款 → REFUND, exact minor units', () => {
    // Proves amounts survive yuan → minor units exactly and the net is charges − refunds.
    const at = new Date().toISOString();
    const csv = billCsv(
      [
        { type: 'CHARGE', merchantOrder: 'o1', amount: 1990, ref: 'txn_1', at, seq: 1 },
        { type: 'CHARGE', merchantOrder: 'o2', amount: 5, ref: 'txn_2', at, seq: 2 },
        { type: 'REFUND', merchantOrder: 'o1', amount: 1990, ref: 're_1', at, seq: 3 },
      ],
      '2026-12-06',
    );
    const expected = {
      lines: [
        { type: 'CHARGE', merchant_order: 'o1', amount: 1990, ref: 'txn_1' },
        { type: 'CHARGE', merchant_order: 'o2', amount: 5, ref: 'txn_2' },
        { type: 'REFUND', merchant_order: 'o1', amount: 1990, ref: 're_1' },
      ],
      net: 5,
    };
    expect(parseBill(billText(Buffer.from(csv, 'utf8')))).toEqual(expected);
    expect(parseBill(billText(zipOne('20261206_业务明细.csv', Buffer.from(csv, 'utf8'))))).toEqual(expected);
  });
});

describe('Alipay answers that say nothing', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ provider: 'alipay' });
  });
  afterAll(async () => s.close());

  it('AP-10 a 500 or a reset connection at the gateway is UNKNOWN, never FAILED; a trade Alipay never saw stays unknown after the close', async () => {
    // Proves no transport failure is read as a decline, and that a close of a trade Alipay has not seen blocks nothing.
    await createSku(s, { sku: 'ap10', stock: 3 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const orders = [];
    // The SDK's HTTP client (urllib) resends once after a reset socket: safe, the same out_trade_no
    // is the same trade. So a reset is armed twice, and the gateway sees two pays of that order.
    for (const [kind, times] of [
      ['ERROR_500', 1],
      ['RESET_CONNECTION', 2],
    ] as const) {
      const o = await s.buy(`ap10-${kind}`, 'ap10');
      await s.control('POST', '/_control/faults', { op: 'charge', kind, merchant_order: o.orderId, times });
      expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
      expect(await s.chargeRequests(o.orderId)).toBe(times);
      orders.push(o);
    }
    // Neither pay reached the ledger: the query finds nothing, the close finds nothing and records nothing.
    expect((await s.recover(0)).body.resolved).toEqual({});
    for (const o of orders) {
      const view = await s.order(o.orderId);
      expect([view.status, view.reservation.status]).toEqual(['UNKNOWN', 'HELD']);
    }
    expect((await s.statement()).lines).toEqual([]);
    const received = await s.received();
    expect(received.filter((r) => r.path.includes('method=alipay.trade.close'))).toHaveLength(2);
    // The buyer pays again with the same out_trade_no: it lands, and the order converges to PAID.
    const [first] = orders;
    expect((await s.pay(first!.token, first!.orderId)).status).toBe(409); // flashpay does not pay an UNKNOWN order twice
    await sdk(s).exec('alipay.trade.pay', {
      bizContent: { out_trade_no: first!.orderId, total_amount: '19.90', subject: 'retry', scene: 'bar_code' },
      notify_url: `${s.url}/v1/providers/alipay/notify`,
    });
    expect((await s.recover(0)).body.resolved).toMatchObject({ PAID: 1 });
    expect((await s.order(first!.orderId)).status).toBe('PAID');
  });
});

function sdk(s: PaymentStack) {
  return appSdk(s.channel.url);
}
