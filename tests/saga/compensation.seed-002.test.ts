import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

// Seed 002 over HTTP: a booking takes a unit, then charges a balance; the fulfilment is refused;
// the completed steps are undone in reverse from the journal — refund first, then the unit.
describe('compensation after a refused fulfilment (seed 002)', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: 2_000 } }); // no lost answers here: generous for a loaded machine
  });
  afterAll(async () => s.close());

  const balance = async (user: string) =>
    ((await s.control('GET', `/_control/accounts/${encodeURIComponent(`${TENANT}/${user}`)}`)) as { balance: number })
      .balance;

  async function book(user: string, sku: string, key: string) {
    const token = await s.token(TENANT, user);
    const first = await s.call('POST', '/v1/orders', { token, body: { sku }, headers: { 'idempotency-key': key } });
    const again = await s.call('POST', '/v1/orders', { token, body: { sku }, headers: { 'idempotency-key': key } });
    expect(again.text).toBe(first.text);
    const orderId = first.body.order_id as string;
    const paid = await s.pay(token, orderId, `${key}/pay`);
    const paidAgain = await s.pay(token, orderId, `${key}/pay`);
    expect(paidAgain.text).toBe(paid.text);
    return { orderId, token, paid };
  }

  it('S002-01 a booking delivered twice takes one unit and one charge; same key with another request is refused; a balance too low is declined', async () => {
    await createSku(s, { sku: 'seat-a', name: 'Seat', price: 120, stock: 2 });
    await s.control('POST', '/_control/accounts', { customer: `${TENANT}/u42`, balance: 500 });
    const b = await book('u42', 'seat-a', 'booking-42');
    expect(b.paid.body).toEqual({ order_id: b.orderId, status: 'PAID' });
    expect(await skuCounters(s, 'seat-a')).toMatchObject({ available: 1, confirmed: 1 });
    expect(await balance('u42')).toBe(380);
    expect((await s.statement()).lines.filter((l) => l.merchant_order === b.orderId)).toHaveLength(1);

    const conflict = await s.call('POST', '/v1/orders', {
      token: b.token,
      body: { sku: 'seat-a', quantity: 2 },
      headers: { 'idempotency-key': 'booking-42' },
    });
    expect([conflict.status, conflict.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    expect(await skuCounters(s, 'seat-a')).toMatchObject({ available: 1, confirmed: 1 });

    await s.control('POST', '/_control/accounts', { customer: `${TENANT}/poor`, balance: 100 });
    const poor = await book('poor', 'seat-a', 'booking-poor');
    expect(poor.paid.body.status).toBe('FAILED');
    expect(await balance('poor')).toBe(100);
    expect(await skuCounters(s, 'seat-a')).toMatchObject({ available: 1, held: 0, confirmed: 1 });
  });

  it('S002-02 fulfilment refused, refund unavailable: COMPENSATION_PENDING, the unit still confirmed, nothing undone recorded', async () => {
    await createSku(s, { sku: 'seat-b', name: 'Seat', price: 120, stock: 2 });
    await s.control('POST', '/_control/accounts', { customer: `${TENANT}/u43`, balance: 500 });
    const b = await book('u43', 'seat-b', 'booking-43');
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: b.orderId });
    await s.control('POST', '/_control/faults', { op: 'refund', kind: 'ERROR_500', merchant_order: b.orderId });
    await s.recover();
    const view = await s.order(b.orderId);
    expect(view.status).toBe('COMPENSATION_PENDING');
    expect(view.reservation.status).toBe('CONFIRMED');
    expect((view as unknown as { fulfilment: { status: string } }).fulfilment.status).toBe('REFUSED');
    const journal = (
      view as unknown as { journal: Array<{ step: string; direction: string; status: string; key: string }> }
    ).journal;
    expect(journal.filter((e) => e.direction === 'undo' && e.status === 'DONE')).toEqual([]);
    expect(journal.find((e) => e.step === 'fulfil')).toMatchObject({ key: `${b.orderId}/fulfil`, status: 'REFUSED' });
    expect(journal.filter((e) => e.direction === 'undo').map((e) => [e.step, e.key, e.status])).toEqual([
      ['charge', `${b.orderId}/refund`, 'UNKNOWN'],
    ]);
    expect(await skuCounters(s, 'seat-b')).toMatchObject({ available: 1, confirmed: 1 });
    expect(await balance('u43')).toBe(380);

    // S002-03: recovery retries the refund with the same key; only then is the unit released. Repeats change nothing.
    await s.recover();
    const after = await s.order(b.orderId);
    expect(after.status).toBe('COMPENSATED');
    expect(after.reservation.status).toBe('RELEASED');
    const undone = (
      after as unknown as { journal: Array<{ step: string; direction: string; status: string; key: string }> }
    ).journal.filter((e) => e.direction === 'undo' && e.status === 'DONE');
    expect(undone.map((e) => [e.step, e.key])).toEqual([
      ['charge', `${b.orderId}/refund`],
      ['reserve', `${b.orderId}/release`],
    ]);
    expect(await skuCounters(s, 'seat-b')).toMatchObject({ available: 2, confirmed: 0 });
    expect(await balance('u43')).toBe(500);
    const report = await s.recover();
    expect(report.body.saga).toMatchObject({ examined: 0 });
    expect(await skuCounters(s, 'seat-b')).toMatchObject({ available: 2, confirmed: 0 });
    expect(await balance('u43')).toBe(500);
    expect((await s.statement()).lines.filter((l) => l.merchant_order === b.orderId).map((l) => l.type)).toEqual([
      'CHARGE',
      'REFUND',
    ]);
    expect(after.timeline.map((t) => t.to)).toEqual([
      'CREATED',
      'PAYING',
      'PAID',
      'COMPENSATING',
      'COMPENSATION_PENDING',
      'COMPENSATING',
      'COMPENSATED',
    ]);
  });

  it('S002-04 a fulfilled order stays PAID with fulfilment FULFILLED and a provider ref; reconciliation is clean', async () => {
    await createSku(s, { sku: 'seat-c', name: 'Seat', price: 120, stock: 1 });
    const b = await book('u44', 'seat-c', 'booking-44');
    await s.recover();
    const view = (await s.order(b.orderId)) as unknown as {
      status: string;
      fulfilment: { status: string; ref?: string };
    };
    expect(view.status).toBe('PAID');
    expect(view.fulfilment.status).toBe('FULFILLED');
    expect(view.fulfilment.ref).toMatch(/^ful_/);
    const rec = await s.call('GET', '/v1/admin/reconciliation', { token: s.admin });
    expect(rec.body.mismatches).toEqual([]);
    expect(rec.body.pending).toBe(0);
  });
});
