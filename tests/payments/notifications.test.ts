import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

describe('payment notifications at the edge', () => {
  let s: PaymentStack;
  let orderId = '';
  beforeAll(async () => {
    s = await startPaymentStack();
    await createSku(s, { sku: 'nt', stock: 5 });
    orderId = (await s.buy('n-user', 'nt')).orderId;
  });
  afterAll(async () => s.close());

  const good = () => ({ notify_id: 'ntf-edge', merchant_order: orderId, kind: 'CHARGED', amount: 1990, txn: 't1' });

  it.each([
    ['a wrong signature', () => s.notify(good(), { secret: 'not-the-secret' }), 'BAD_SIGNATURE'],
    ['a stale timestamp', () => s.notify(good(), { at: Math.floor(Date.now() / 1000) - 301 }), 'BAD_SIGNATURE'],
    [
      'a timestamp from the future',
      () => s.notify(good(), { at: Math.floor(Date.now() / 1000) + 301 }),
      'BAD_SIGNATURE',
    ],
    ['no signature', () => s.call('POST', '/v1/payment-notifications', { body: good() }), 'BAD_SIGNATURE'],
    ['an unknown kind', () => s.notify({ ...good(), kind: 'CHARGEBACK' }), 'VALIDATION'],
    ['a negative amount', () => s.notify({ ...good(), amount: -1990 }), 'VALIDATION'],
    ['a fractional amount', () => s.notify({ ...good(), amount: 19.9 }), 'VALIDATION'],
    ['a missing notify_id', () => s.notify({ ...good(), notify_id: undefined }), 'VALIDATION'],
  ])('%s: 400, nothing recorded, no state change', async (_name, send, code) => {
    // Proves a notification is authenticated and validated before it can touch anything.
    const result = await send();
    expect(result.status).toBe(400);
    expect(result.body.code).toBe(code);
    expect(await countRows(s.db, 'payment_notifications')).toBe(0);
    const view = await s.order(orderId);
    expect([view.status, view.version, view.reservation.status]).toEqual(['CREATED', 1, 'HELD']);
  });

  it('an unknown merchant order is recorded as UNKNOWN_ORDER; a DECLINED for a PAID order is IGNORED and flagged (a REFUNDED one converges it: tests/payments/already-refunded.test.ts)', async () => {
    // Proves every authentic notification is recorded with its effect, even when it changes nothing.
    const unknown = await s.notify({ notify_id: 'ntf-u', merchant_order: 'ord_nobody', kind: 'CHARGED', amount: 1 });
    expect(unknown.body).toEqual({ effect: 'UNKNOWN_ORDER' });
    expect(
      await countRows(s.db, 'payment_notifications', "merchant_order = 'ord_nobody' AND effect = 'UNKNOWN_ORDER'"),
    ).toBe(1);
    const o = await s.buy('n-user2', 'nt');
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('PAID');
    const declined = await s.notify({ notify_id: 'ntf-r', merchant_order: o.orderId, kind: 'DECLINED', amount: 1990 });
    expect(declined.body).toEqual({ effect: 'IGNORED' });
    const view = await s.order(o.orderId);
    expect(view.status).toBe('PAID');
    expect(view.attention).toMatch(/declined for a PAID order/);
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = $1 AND needs_attention', [o.orderId])).toBe(
      1,
    );
  });

  it('a storage error answers 500 so the provider retries, and records nothing', async () => {
    // Proves a notification is never acknowledged unless its effect committed.
    await s.db.pool.query('ALTER TABLE payment_notifications ADD CONSTRAINT reject_all CHECK (false) NOT VALID');
    try {
      const o = await s.buy('n-user3', 'nt');
      const result = await s.notify({ notify_id: 'ntf-500', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990 });
      expect(result.status).toBe(500);
      expect((await s.order(o.orderId)).status).toBe('CREATED');
    } finally {
      await s.db.pool.query('ALTER TABLE payment_notifications DROP CONSTRAINT reject_all');
    }
  });
});
