import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestDigest } from '../../src/idempotency/digest.ts';
import { inTx } from '../../src/platform/db.ts';
import { transition } from '../../src/orders/orders.repo.ts';
import { TENANT } from '../support/fixtures.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

describe('idempotency keys on /pay', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  it('an UNKNOWN answer is final for its key; the same key on another order is 422 and charges nothing', async () => {
    // Proves a retried pay never charges again, and a reused pay key has no side effect.
    await createSku(s, { sku: 'pi', stock: 3 });
    const a = await s.buy('pi-user', 'pi');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: a.orderId,
      ms: 400,
    });
    const first = await s.pay(a.token, a.orderId, 'pay-key');
    expect(first.body).toEqual({ order_id: a.orderId, status: 'UNKNOWN' });
    await s.recover(0);
    expect((await s.order(a.orderId)).status).toBe('PAID');
    const retry = await s.pay(a.token, a.orderId, 'pay-key');
    expect([retry.status, retry.text, retry.headers.get('idempotent-replayed')]).toEqual([200, first.text, 'true']);
    expect(await s.chargeRequests(a.orderId)).toBe(1);

    const b = await s.buy('pi-user', 'pi');
    const reused = await s.pay(a.token, b.orderId, 'pay-key');
    expect([reused.status, reused.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    expect(await s.chargeRequests(b.orderId)).toBe(0);
    expect((await s.order(b.orderId)).status).toBe('CREATED');
  });

  it('PM-01 payment_method is part of the request its key is bound to; with method wallet it is refused and nothing moves', async () => {
    // Proves the buyer's payment method (issue 37) cannot be swapped under a key that was already used.
    await createSku(s, { sku: 'pm', stock: 2 });
    const o = await s.buy('pm-user', 'pm');
    const pay = (key: string, body: unknown) =>
      s.call('POST', `/v1/orders/${o.orderId}/pay`, { token: o.token, body, headers: { 'idempotency-key': key } });
    const walletToo = await pay('pm-w', { method: 'wallet', payment_method: 'pm_card_visa' });
    expect([walletToo.status, walletToo.body.code]).toEqual([400, 'VALIDATION']);
    expect(await s.chargeRequests(o.orderId)).toBe(0);
    const first = await pay('pm-key', { payment_method: 'pm_card_visa' });
    expect([first.status, first.body.status]).toEqual([200, 'PAID']);
    const swapped = await pay('pm-key', { payment_method: 'pm_card_mastercard' });
    expect([swapped.status, swapped.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    const same = await pay('pm-key', { payment_method: 'pm_card_visa' });
    expect([same.text, same.headers.get('idempotent-replayed')]).toEqual([first.text, 'true']);
    expect(await s.chargeRequests(o.orderId)).toBe(1);
  });

  it('a pay that is still in flight makes a second request with the same key wait, then replay', async () => {
    // Proves the waiting loser replays the winner's answer instead of charging again.
    await createSku(s, { sku: 'pi2', stock: 1 });
    const o = await s.buy('pi2-user', 'pi2');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_REQUEST',
      merchant_order: o.orderId,
      ms: 200,
    });
    const [one, two] = await Promise.all([s.pay(o.token, o.orderId, 'same'), s.pay(o.token, o.orderId, 'same')]);
    expect(one.text).toBe(two.text);
    expect([one.headers.get('idempotent-replayed'), two.headers.get('idempotent-replayed')].sort()).toEqual([
      'false',
      'true',
    ]);
    expect(await s.chargeRequests(o.orderId)).toBe(1);
  });

  it('a pay key whose first request died mid-call is taken over after its lease and answered UNKNOWN', async () => {
    // Proves a crashed pay never leaves its key stuck: the retry gets an honest answer, recovery does the rest.
    await createSku(s, { sku: 'pi3', stock: 1 });
    const o = await s.buy('pi3-user', 'pi3');
    const past = new Date(s.clock.now().getTime() - 1000);
    // What a process killed between PAYING and the reply leaves behind.
    await inTx(s.db.pool, async (tx) => {
      await transition(tx, o.orderId, 'CREATED', 'PAYING', 'pay', past);
      await tx.query(
        `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, locked_until, created_at)
         VALUES ($1, $2, 'pay_order', 'crashed', $3, 'PROCESSING', $4, $4)`,
        [TENANT, 'pi3-user', requestDigest('pay_order', { id: o.orderId }, {}), past],
      );
    });
    const retry = await s.pay(o.token, o.orderId, 'crashed');
    expect([retry.status, retry.body, retry.headers.get('idempotent-replayed')]).toEqual([
      200,
      { order_id: o.orderId, status: 'UNKNOWN' },
      'false',
    ]);
    const again = await s.pay(o.token, o.orderId, 'crashed');
    expect([again.text, again.headers.get('idempotent-replayed')]).toEqual([retry.text, 'true']);
    expect(await s.chargeRequests(o.orderId)).toBe(0);
    expect((await s.recover(0)).body.resolved).toMatchObject({ FAILED: 1 }); // never charged: closed, FAILED
  });
});
