import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skuCounters } from '../support/fixtures.ts';
import { countRows } from '../support/stack.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { credit, walletPay } from '../wallet/support.ts';

// Issue 16: a pay confirms its reservation without the SKU's row lock (migration 110,
// src/stock/reservations/finish.ts). Before, confirming moved the SKU row's counters, so a pay
// waited on the hot row behind the creates — and here, behind a transaction holding it, until
// lock_timeout (5 s) failed it.
describe('confirming off the hot SKU row', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
  });
  afterAll(async () => s.close());

  it('CR-01 a provider pay and a wallet pay end PAID while another transaction holds the SKU row FOR UPDATE', async () => {
    await createSku(s, { sku: 'cr1', stock: 5 });
    await s.control('POST', '/_control/callbacks', { mode: 'AUTO' });
    const byCard = await s.buy('cr1-card', 'cr1');
    const byWallet = await s.buy('cr1-wallet', 'cr1');
    await credit(s, 'cr1-wallet', 10_000);
    const blocker = await s.db.pool.connect();
    try {
      await blocker.query(`BEGIN; SELECT 1 FROM skus WHERE sku = 'cr1' FOR UPDATE`);
      const [card, wallet] = await Promise.all([
        s.pay(byCard.token, byCard.orderId),
        walletPay(s, byWallet.token, byWallet.orderId),
      ]);
      expect([card.body.status, wallet.body.status]).toEqual(['PAID', 'PAID']);
      // The row is still locked by the blocker: the pays did not wait for it to go.
      const locked = await s.db.pool.query(`SELECT 1 FROM skus WHERE sku = 'cr1' FOR UPDATE NOWAIT`).then(
        () => false,
        () => true,
      );
      expect(locked).toBe(true);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    expect((await s.order(byCard.orderId)).reservation.status).toBe('CONFIRMED');
    expect(await skuCounters(s, 'cr1')).toMatchObject({ total: 5, available: 3, held: 0, confirmed: 2 });
  });

  it('CR-02 concurrent pays, cancels and expiry sweeps on one SKU: counters derived from the rows, conserved, reconciliation clean', async () => {
    await createSku(s, { sku: 'cr2', stock: 40, hold_ttl_ms: 1000 });
    await s.control('POST', '/_control/callbacks', { mode: 'AUTO' });
    // Half the holds are past their expiry when the pays, cancels and sweeps race; half are fresh.
    const early = await Promise.all(Array.from({ length: 15 }, (_, i) => s.buy(`cr2-e${i}`, 'cr2')));
    s.clock.advance(1500);
    const fresh = await Promise.all(Array.from({ length: 15 }, (_, i) => s.buy(`cr2-f${i}`, 'cr2')));
    const buyers = [...early, ...fresh];
    const admin = s.admin;
    const work = buyers.map(async (b, i) => {
      if (i % 3 === 2) return s.call('POST', `/v1/orders/${b.orderId}/cancel`, { token: b.token });
      return s.pay(b.token, b.orderId);
    });
    const sweeps = [1, 2].map(() => s.call('POST', '/v1/admin/expiry/run', { token: admin }));
    // Buyers keep creating on the same SKU while pays, cancels and sweeps run.
    const late = Array.from({ length: 10 }, (_, i) => s.buy(`cr2-late-${i}`, 'cr2'));
    await Promise.all([...work, ...sweeps, ...late]);
    const c = await skuCounters(s, 'cr2');
    expect(c.total).toBe(40);
    expect(c.available + c.held + c.confirmed).toBe(40);
    const rows = async (status: string) => countRows(s.db, 'reservations', `sku = 'cr2' AND status = $1`, [status]);
    expect([c.held, c.confirmed, c.released]).toEqual([
      await rows('HELD'),
      await rows('CONFIRMED'),
      await rows('RELEASED'),
    ]);
    const paid = await countRows(s.db, 'orders', `sku = 'cr2' AND status = 'PAID'`);
    expect(c.confirmed).toBe(paid);
    const report = await s.call('GET', '/v1/admin/reconciliation', { token: admin });
    expect(
      (report.body.mismatches as Array<{ class: string }>).filter((m) =>
        ['STOCK_NOT_CONSERVED', 'CONFIRMED_NE_PAID'].includes(m.class),
      ),
    ).toEqual([]);
  });
});
