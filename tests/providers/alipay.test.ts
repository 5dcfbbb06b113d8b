import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUYER_CONFIRM_METHOD, BUYER_WAIT_METHOD } from '../../src/channel/dialects/alipay.ts';
import { refundKeyFor } from '../../src/payments/channel.client.ts';
import { alipayClient } from '../../src/payments/providers/alipay.ts';
import { countRows } from '../support/stack.ts';
import { skuCounters } from '../support/fixtures.ts';
import {
  createSku,
  eventually,
  startPaymentStack,
  type PaymentStack,
  unknownOrder as lostPay,
} from '../support/payments.ts';
import { LOST_REPLY_TIMEOUT_MS } from '../support/providers/index.ts';
import { drain, reconciliation } from '../reconcile/scenario.ts';
import { alipayNotifyForm, alipayTestKeys, appSdk } from '../support/providers/alipay.ts';

// Alipay end to end: flashpay's adapter (the official alipay-sdk) against the Alipay double over
// real HTTP, with real PostgreSQL. Every test asserts business outcomes: order statuses, the
// double's ledger, notification effects and the reconciliation read from Alipay's bill.

type Sent = Array<{ notify_id: string; merchant_order: string; kind: string; txn: string; status: string }>;

describe('Alipay through alipay-sdk against its double', () => {
  let s: PaymentStack;
  const sdk = () => appSdk(s.channel.url);
  const notifyForm = (rawBody: string) =>
    s.call('POST', '/v1/providers/alipay/notify', {
      rawBody,
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    });
  /** An order whose charge reply is lost (the double answers after the pay timeout): UNKNOWN, unit HELD. */
  const unknownOrder = async (user: string, sku: string) => {
    return lostPay(s, user, sku, 800);
  };
  const txnOf = async (orderId: string) =>
    (await s.statement()).lines.find((l) => l.type === 'CHARGE' && l.merchant_order === orderId)?.ref;

  beforeAll(async () => {
    s = await startPaymentStack({ provider: 'alipay', config: { payTimeoutMs: LOST_REPLY_TIMEOUT_MS } });
  });
  afterAll(async () => s.close());

  it('AP-01 the SDK signs alipay.trade.pay with out_trade_no and an exact total_amount; the double refuses a bad signature', async () => {
    // Proves the real SDK's wire: signed common parameters in the query, 1990 minor units as "19.90".
    await createSku(s, { sku: 'ap1', stock: 2 });
    await s.control('POST', '/_control/callbacks', { mode: 'AUTO' });
    const o = await s.buy('ap1-user', 'ap1');
    expect((await s.pay(o.token, o.orderId)).body).toEqual({ order_id: o.orderId, status: 'PAID' });
    const received = await s.received();
    const pays = received.filter((r) => r.path.includes('method=alipay.trade.pay'));
    expect(pays).toHaveLength(1);
    const query = new URL(pays[0]!.path, s.channel.url).searchParams;
    expect(query.get('sign_type')).toBe('RSA2');
    expect(query.get('sign')).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(query.get('notify_url')).toBe(new URL('/v1/providers/alipay/notify', s.deps.notifyUrl).toString());
    expect(pays[0]!.headers['content-type']).toContain('application/x-www-form-urlencoded');
    // The double verified that signature and kept the trade under flashpay's order id, at exactly 19.90.
    const trade = (await sdk().exec(
      'alipay.trade.query',
      { bizContent: { out_trade_no: o.orderId } },
      { validateSign: true },
    )) as Record<string, unknown>;
    expect(trade).toMatchObject({
      code: '10000',
      trade_status: 'TRADE_SUCCESS',
      out_trade_no: o.orderId,
      total_amount: '19.90',
    });
    expect((await s.statement()).lines.filter((l) => l.merchant_order === o.orderId)).toMatchObject([
      { type: 'CHARGE', amount: 1990 },
    ]);
    // A request signed with another key than the app's is refused by the double.
    const forger = appSdk(s.channel.url);
    forger.config.privateKey = alipayTestKeys().forger.privateKey;
    const refused = (await forger.exec('alipay.trade.query', { bizContent: { out_trade_no: o.orderId } })) as Record<
      string,
      unknown
    >;
    expect(refused).toMatchObject({ code: '40002', sub_code: 'isv.invalid-signature' });
  });

  it('AP-02 a lost reply: UNKNOWN with the unit HELD; recovery queries alipay.trade.query → PAID', async () => {
    // Proves a timeout at Alipay is never a failure and converges by query.
    await createSku(s, { sku: 'ap2', stock: 2 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await unknownOrder('ap2-user', 'ap2');
    expect((await s.order(o.orderId)).reservation.status).toBe('HELD');
    expect((await s.recover(0)).body.resolved).toMatchObject({ PAID: 1 });
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status, view.timeline.at(-1)?.reason]).toEqual([
      'PAID',
      'CONFIRMED',
      'query',
    ]);
  });

  it('AP-03 WAIT_BUYER_PAY (10003): UNKNOWN until the buyer confirms; the TRADE_SUCCESS notify makes it PAID once, answered success', async () => {
    // Proves a pay waiting for its buyer is an unknown, not a failure, and one notify settles it.
    await createSku(s, { sku: 'ap3', stock: 2 });
    await s.control('POST', '/_control/callbacks', { mode: 'AUTO' });
    const o = await s.buy('ap3-user', 'ap3');
    await sdk().exec(BUYER_WAIT_METHOD, { bizContent: { out_trade_no: o.orderId } });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    // Recovery asks Alipay: the trade waits for its buyer, so the order stays UNKNOWN with its unit held.
    expect((await s.recover(0)).body.resolved).toEqual({});
    expect([(await s.order(o.orderId)).status, (await s.order(o.orderId)).reservation.status]).toEqual([
      'UNKNOWN',
      'HELD',
    ]);
    expect(await s.statement().then((st) => st.lines.filter((l) => l.merchant_order === o.orderId))).toEqual([]);

    await sdk().exec(BUYER_CONFIRM_METHOD, { bizContent: { out_trade_no: o.orderId } });
    const view = await eventually(
      () => s.order(o.orderId),
      (v) => v.notifications.length === 1,
    );
    expect(view.notifications.map((n) => [n.kind, n.effect])).toEqual([['CHARGED', 'PAID']]);
    expect([view.status, view.reservation.status]).toEqual(['PAID', 'CONFIRMED']);
    const sent = (await s.control('GET', '/_control/notifications')) as Sent;
    expect(sent.filter((n) => n.merchant_order === o.orderId).map((n) => n.status)).toEqual(['DELIVERED']);
    // The same notify again (Alipay retries until it reads `success`): answered success, nothing changes.
    const note = sent.find((n) => n.merchant_order === o.orderId)!;
    const again = await s.notifyAs({
      notify_id: note.notify_id,
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
      txn: note.txn,
    });
    expect([again.status, again.text]).toEqual([200, 'success']);
    expect(await countRows(s.db, 'order_transitions', "order_id = $1 AND to_status = 'PAID'", [o.orderId])).toBe(1);
  });

  it('AP-04 a forged notify is 400 BAD_SIGNATURE and records nothing', async () => {
    // Proves only Alipay's key can move an order.
    await createSku(s, { sku: 'ap4', stock: 2 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await unknownOrder('ap4-user', 'ap4');
    const body = {
      notify_id: `forged-${o.orderId}`,
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
      txn: 'txn-forged',
    };
    const forged = await s.notifyAs(body, { forged: true });
    expect([forged.status, forged.body?.code]).toEqual([400, 'BAD_SIGNATURE']);
    // A genuine notify altered after signing (another amount) is forged too.
    const tampered = alipayNotifyForm(body).replace('total_amount=19.90', 'total_amount=0.01');
    expect((await notifyForm(tampered)).body?.code).toBe('BAD_SIGNATURE');
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = $1', [o.orderId])).toBe(0);
    expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
    expect((await s.recover(0)).body.resolved).toMatchObject({ PAID: 1 });
  });

  it('AP-05 the same notify twice: one effect, the copy DUPLICATE; TRADE_FINISHED after TRADE_SUCCESS changes nothing', async () => {
    // Proves notify_id deduplicates and a later status of a paid trade moves nothing.
    await createSku(s, { sku: 'ap5', stock: 2 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await unknownOrder('ap5-user', 'ap5');
    const txn = await txnOf(o.orderId);
    const success = { notify_id: `ap5-${o.orderId}`, merchant_order: o.orderId, kind: 'CHARGED', amount: 1990, txn };
    const answers = await Promise.all([s.notifyAs(success), s.notifyAs(success)]);
    expect(answers.map((a) => [a.status, a.text])).toEqual([
      [200, 'success'],
      [200, 'success'],
    ]);
    const paid = await s.order(o.orderId);
    expect(paid.notifications.map((n) => [n.notify_id, n.effect])).toEqual([[success.notify_id, 'PAID']]);
    const finished = alipayNotifyForm({ ...success, notify_id: `ap5-finished-${o.orderId}` }, false, {
      trade_status: 'TRADE_FINISHED',
    });
    expect((await notifyForm(finished)).text).toBe('success');
    const after = await s.order(o.orderId);
    expect(after.notifications.map((n) => n.effect)).toEqual(['PAID', 'DUPLICATE']);
    expect([after.status, after.version]).toEqual(['PAID', paid.version]);
    expect(await countRows(s.db, 'order_transitions', "order_id = $1 AND to_status = 'PAID'", [o.orderId])).toBe(1);
  });

  it('AP-06 a late success after the unit was sold refunds under the fixed out_request_no: sent again, still one refund line', async () => {
    // Proves the refund is idempotent at Alipay by its fixed key, however often it is sent.
    await createSku(s, { sku: 'ap6', stock: 1, hold_ttl_ms: 1000 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await unknownOrder('ap6-user', 'ap6');
    s.clock.advance(2000);
    expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(1);
    const other = await s.buy('ap6-other', 'ap6'); // the unit is sold again
    await s.control('POST', '/_control/faults', {
      op: 'refund',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 800,
    });
    const late = {
      notify_id: `ap6-${o.orderId}`,
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
      txn: await txnOf(o.orderId),
    };
    expect((await s.notifyAs(late)).text).toBe('success');
    expect((await s.order(o.orderId)).status).toBe('REFUNDING'); // the refund reply was lost; Alipay did refund
    expect((await s.recover(0)).body.resolved).toMatchObject({ REFUNDED: 1 });
    // The refund once more through the adapter, same out_request_no: the same refund, no second line.
    const adapter = alipayClient(s.deps.config.providers.alipay, 5_000);
    expect(await adapter.refund(o.orderId, refundKeyFor(o.orderId), 1990)).toMatchObject({ kind: 'REFUNDED' });
    expect(await adapter.query(o.orderId)).toMatchObject({ kind: 'STATUS', status: 'REFUNDED', amount: 1990 });
    const lines = (await s.statement()).lines.filter((l) => l.merchant_order === o.orderId);
    expect(lines.map((l) => [l.type, l.amount])).toEqual([
      ['CHARGE', 1990],
      ['REFUND', 1990],
    ]);
    expect((await s.order(o.orderId)).status).toBe('REFUNDED');
    expect(await skuCounters(s, 'ap6')).toMatchObject({ total: 1, held: 1, confirmed: 0 });
    expect((await s.call('POST', `/v1/orders/${other.orderId}/cancel`, { token: other.token })).status).toBe(200);
  });

  it('AP-07 reconciliation from the bill: clean after the mixed run; a trade only Alipay has is PROVIDER_RECORD_WITHOUT_ORDER', async () => {
    // Proves the bill (zip of CSV, parsed by flashpay) is the statement reconciliation compares with.
    await drain(s);
    const clean = await reconciliation(s);
    expect([clean.mismatches, clean.pending]).toEqual([[], 0]);

    const adapter = alipayClient(s.deps.config.providers.alipay, 5_000);
    const bill = await adapter.statement();
    const paidSum = bill.lines.reduce((sum, l) => sum + (l.type === 'CHARGE' ? l.amount : -l.amount), 0);
    expect(bill.net).toBe(paidSum);
    expect(bill.net).toBe((await s.statement()).net);

    // A barcode pay for an out_trade_no flashpay never had, through the SDK as any other app call.
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const planted = 'ord_planted_at_alipay';
    const answer = (await sdk().exec(
      'alipay.trade.pay',
      {
        bizContent: { out_trade_no: planted, total_amount: '5.00', subject: 'planted', scene: 'bar_code' },
        notify_url: `${s.url}/v1/providers/alipay/notify`,
      },
      { validateSign: true },
    )) as Record<string, unknown>;
    expect(answer).toMatchObject({ code: '10000', out_trade_no: planted, total_amount: '5.00' });
    const report = await reconciliation(s);
    expect(report.mismatches.filter((m) => m.order_id === planted).map((m) => m.class)).toEqual([
      'PROVIDER_RECORD_WITHOUT_ORDER',
    ]);
  });
});
