import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { createSku, eventually, startPaymentStack, type PaymentStack } from '../support/payments.ts';

// Issue 40 (LC-01): once the provider has charged, an ordinary database error in the pay's last
// commit (here a trigger refusing the PAID transition, as a constraint would) is answered UNKNOWN,
// never 500: the money moved, and a client told "error" may pay again. The order stays PAYING
// with its unit held, the key unanswered, and recovery converges it to PAID with one charge.
describe('a pay whose last commit fails after the charge', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: 5_000 } });
  });
  afterAll(async () => s?.close());

  /** Refuses this order's PAID transition with an ordinary error (23514), in every transaction. */
  async function refusePaid(orderId: string): Promise<void> {
    await s.db.pool.query(`
      CREATE FUNCTION lc_refuse_paid() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'planted: PAID refused' USING ERRCODE = 'check_violation';
      END $$`);
    await s.db.pool.query(`
      CREATE TRIGGER lc_refuse_paid BEFORE UPDATE ON orders FOR EACH ROW
      WHEN (NEW.order_id = '${orderId.replace(/[^a-z0-9_]/g, '')}' AND NEW.status = 'PAID')
      EXECUTE FUNCTION lc_refuse_paid()`);
  }

  it('LC-01: the charge went through, the commit of its answer failed: 200 UNKNOWN, then PAID by recovery, one charge', async () => {
    await createSku(s, { sku: 'lc', stock: 2 });
    const o = await s.buy('lc-user', 'lc');
    await refusePaid(o.orderId);

    const answer = await s.pay(o.token, o.orderId, 'lc-pay');
    expect([answer.status, answer.body]).toEqual([200, { order_id: o.orderId, status: 'UNKNOWN' }]);
    // What the client was told is what is true: charged at the provider, not recorded here.
    expect(await s.control('GET', `/charges/${o.orderId}`)).toMatchObject({ status: 'CHARGED' });
    const row = await s.db.pool.query('SELECT status FROM orders WHERE order_id = $1', [o.orderId]);
    expect(row.rows[0]?.status).toBe('PAYING');
    expect(await countRows(s.db, 'reservations', "request_key LIKE $1 || '/%' AND status = 'HELD'", [o.orderId])).toBe(
      1,
    );
    expect(await countRows(s.db, 'idempotency_keys', "idempotency_key = 'lc-pay' AND state = 'PROCESSING'")).toBe(1);

    await s.db.pool.query('DROP TRIGGER lc_refuse_paid ON orders');
    await s.db.pool.query('DROP FUNCTION lc_refuse_paid()');
    s.clock.advance(60_000);
    const view = await eventually(
      async () => {
        await s.recover(5_000);
        return s.order(o.orderId);
      },
      (v) => v.status === 'PAID',
    );
    expect(view.reservation.status).toBe('CONFIRMED');
    const charges = (await s.statement()).lines.filter((l) => l.merchant_order === o.orderId && l.type === 'CHARGE');
    expect(charges).toHaveLength(1);
    // The same key, retried once its lease is over, learns the outcome; it never charges again.
    const retry = await s.pay(o.token, o.orderId, 'lc-pay');
    expect([retry.status, retry.body]).toEqual([200, { order_id: o.orderId, status: 'PAID' }]);
    expect(await s.chargeRequests(o.orderId)).toBe(1);
  });
});
