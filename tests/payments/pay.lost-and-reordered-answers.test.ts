import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, eventually, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { LOST_REPLY_TIMEOUT_MS, providersUnderTest } from '../support/providers/index.ts';
import { everyOf } from '../support/every.ts';

type Held = Array<{ id: string; notify_id: string; merchant_order: string; kind: string }>;
const pairs = (timeline: Array<{ from: string | null; to: string }>) => timeline.map((t) => [t.from, t.to]);

describe.each(providersUnderTest())('lost, lingering, duplicated and reordered provider answers [%s]', (provider) => {
  let s: PaymentStack;
  const held = async (orderId: string) =>
    ((await s.control('GET', '/_control/callbacks/held')) as Held).filter((h) => h.merchant_order === orderId);
  beforeAll(async () => {
    s = await startPaymentStack({ provider, config: { payTimeoutMs: LOST_REPLY_TIMEOUT_MS } });
  });
  afterAll(async () => s.close());

  it('C29-04 a lost reply: UNKNOWN with the unit HELD; recovery queries → PAID; the late callback is DUPLICATE', async () => {
    // Proves a timeout is never a failure, and the query converges it to exactly one PAID.
    await createSku(s, { sku: 'd4', stock: 3 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await s.buy('u4', 'd4');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 1200,
    });
    const paid = await s.pay(o.token, o.orderId);
    expect(paid.body).toEqual({ order_id: o.orderId, status: 'UNKNOWN' });
    let view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['UNKNOWN', 'HELD']);
    expect(await skuCounters(s, 'd4')).toMatchObject({ available: 2, held: 1 });

    const recovered = await s.recover();
    expect(recovered.body.resolved).toMatchObject({ PAID: 1 });
    const [callback] = await held(o.orderId);
    await s.control('POST', '/_control/callbacks/release', { ids: [callback?.id] });
    view = await eventually(
      () => s.order(o.orderId),
      (v) => v.notifications.length === 1,
    );
    expect(view.notifications[0]?.effect).toBe('DUPLICATE');
    expect(pairs(view.timeline)).toEqual([
      [null, 'CREATED'],
      ['CREATED', 'PAYING'],
      ['PAYING', 'UNKNOWN'],
      ['UNKNOWN', 'PAID'],
    ]);
    expect(view.timeline[3]?.reason).toBe('query');
    expect(await skuCounters(s, 'd4')).toMatchObject({ available: 2, held: 0, confirmed: 1 });
  });

  it('C29-05 a lingering charge: recovery finds NOT_FOUND and closes; the fake channel FAILS it and refuses the late charge, a real provider cannot close it and the charge lands PAID once', async () => {
    // Proves NOT_FOUND is answered by a close, and the close makes a late charge impossible.
    await createSku(s, { sku: 'd5', stock: 3 });
    const o = await s.buy('u5', 'd5');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_REQUEST',
      merchant_order: o.orderId,
      ms: 1500,
    });
    const started = Date.now();
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    const recovered = await s.recover();
    if (s.provider !== 'fake') {
      // A real provider cannot close what it has not received (Stripe: no PaymentIntent to cancel;
      // Alipay: ACQ.TRADE_NOT_EXIST, nothing recorded), so the close cannot block the lingering
      // charge: the order waits UNKNOWN with its unit HELD, the charge lands, a query makes it PAID once.
      expect(recovered.body.resolved).not.toHaveProperty('FAILED');
      expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
      await sleep(Math.max(0, 1700 - (Date.now() - started)));
      expect((await s.recover()).body.resolved).toMatchObject({ PAID: 1 });
      const paid = await s.order(o.orderId);
      expect([paid.status, paid.reservation.status]).toEqual(['PAID', 'CONFIRMED']);
      const lines = (await s.statement()).lines.filter((l) => l.merchant_order === o.orderId);
      expect(lines.map((l) => [l.type, l.amount])).toEqual([['CHARGE', 1990]]);
      return;
    }
    expect(recovered.body.resolved).toMatchObject({ FAILED: 1 });
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['FAILED', 'RELEASED']);
    expect(view.timeline.at(-1)?.reason).toBe('close CLOSED');
    expect(await skuCounters(s, 'd5')).toMatchObject({ available: 3, held: 0 });
    // The lingering request is held inside the channel for 1.5 s; nothing observable marks its landing.
    await sleep(Math.max(0, 1700 - (Date.now() - started)));
    expect((await s.control('GET', `/charges/${o.orderId}`)) as { status: string }).toMatchObject({ status: 'CLOSED' });
    const retry = await fetch(`${s.channel.url}/charge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchant_order: o.orderId, amount: 1990, notify_url: s.deps.notifyUrl }),
    });
    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({ result: 'CLOSED' });
    expect((await s.statement()).lines.filter((l) => l.merchant_order === o.orderId)).toEqual([]);
  });

  it('C29-06 the same CHARGED from 16 concurrent requests: one PAID, fifteen DUPLICATE, one transition', async () => {
    // Proves the row lock makes a success take effect once, however often it arrives.
    await createSku(s, { sku: 'd6', stock: 3 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await s.buy('u6', 'd6');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 400,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    const body = { notify_id: 'ntf-c29-06', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990, txn: 'txn-x' };
    const answers = await Promise.all(Array.from({ length: 16 }, () => s.notifyAs(body)));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 16 }, () => 200));
    // Alipay's route answers the plain text `success` (the effect is in the record); the others, the effect.
    const effects = answers.map((a) => (provider === 'alipay' ? 'n/a' : (a.body.effect as string)));
    if (provider !== 'alipay') {
      expect(effects.filter((e) => e === 'PAID')).toHaveLength(1);
      expect(effects.filter((e) => e === 'DUPLICATE')).toHaveLength(15);
    }
    expect(await countRows(s.db, 'order_transitions', "order_id = $1 AND to_status = 'PAID'", [o.orderId])).toBe(1);
    expect(await countRows(s.db, 'outbox', "order_id = $1 AND event_type = 'ORDER_PAID'", [o.orderId])).toBe(1);
    // Stored once by notify_id; every copy names what the first one did.
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = $1', [o.orderId])).toBe(1);
    if (provider !== 'alipay')
      expect(
        everyOf(
          answers.filter((a) => a.body.effect === 'DUPLICATE'),
          (a) => a.body.recorded_effect === 'PAID',
        ),
      ).toBe(true);
  });

  it('a captured notification replayed later is answered from the record: no row, no lock, no change', async () => {
    await createSku(s, { sku: 'd6r', stock: 1 });
    const o = await s.buy('u6r', 'd6r');
    const body = { notify_id: 'ntf-replayed', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990, txn: 'txn-r' };
    const first = await s.notifyAs(body);
    if (provider !== 'alipay') expect(first.body).toEqual({ effect: 'PAID' });
    const before = await s.order(o.orderId);
    expect(before.status).toBe('PAID');
    // The order row is locked by someone else: a replay must not queue behind it.
    const blocker = await s.db.pool.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM orders WHERE order_id = $1 FOR UPDATE', [o.orderId]);
    try {
      const replayed = await s.notifyAs(body);
      expect(replayed.status).toBe(200);
      if (provider !== 'alipay') expect(replayed.body).toEqual({ effect: 'DUPLICATE', recorded_effect: 'PAID' });
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = $1', [o.orderId])).toBe(1);
    expect((await s.order(o.orderId)).version).toBe(before.version);
  });

  it('C29-06 out of order after a refund: REFUNDED then CHARGED arrive reversed and leave the order REFUNDED', async () => {
    // Proves late and reordered messages cannot move a refunded order back.
    await createSku(s, { sku: 'd6b', stock: 1, hold_ttl_ms: 1000 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await s.buy('u6b', 'd6b');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 400,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    s.clock.advance(2000);
    expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(1);
    await s.buy('someone-else', 'd6b'); // the unit is sold again
    await s.recover();
    expect((await s.order(o.orderId)).status).toBe('REFUNDED');
    const callbacks = await eventually(
      () => held(o.orderId),
      (h) => h.length === 2,
    );
    const refunded = callbacks.find((h) => h.kind === 'REFUNDED');
    const charged = callbacks.find((h) => h.kind === 'CHARGED');
    await s.control('POST', '/_control/callbacks/release', { ids: [refunded?.id, charged?.id] });
    const view = await eventually(
      () => s.order(o.orderId),
      (v) => v.notifications.length === 2,
    );
    expect(view.notifications.map((n) => [n.kind, n.effect])).toEqual([
      ['REFUNDED', 'IGNORED'],
      ['CHARGED', 'DUPLICATE'],
    ]);
    expect(view.status).toBe('REFUNDED');
    expect(pairs(view.timeline).slice(-2)).toEqual([
      ['UNKNOWN', 'REFUNDING'],
      ['REFUNDING', 'REFUNDED'],
    ]);
    const lines = (await s.statement()).lines.filter((l) => l.merchant_order === o.orderId);
    expect(lines.map((l) => l.type)).toEqual(['CHARGE', 'REFUND']);
  });
});
