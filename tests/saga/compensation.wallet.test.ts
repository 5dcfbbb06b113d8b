import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';
import { books, credit, order, walletPay } from '../wallet/support.ts';

// Seed 002 with the wallet as the balance (seed 004's payment key): the compensating refund is a
// credit back to the buyer's wallet under the refund key, once, before the unit goes back on sale.
describe('compensation of a wallet-paid order', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: 2_000 } });
  });
  afterAll(async () => s.close());

  it('S002-W a refused fulfilment credits the wallet back once, then releases the unit: COMPENSATED, the provider never called', async () => {
    await createSku(s, { sku: 'seat-w', name: 'Seat', price: 120, stock: 2 });
    await credit(s, 'w42', 500);
    const token = await s.token(TENANT, 'w42');
    const orderId = await order(s, token, 'seat-w');
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: orderId });
    expect((await walletPay(s, token, orderId, 'booking-w42/pay')).body).toMatchObject({ status: 'PAID' });
    const balance = async () => (await s.call('GET', '/v1/wallet', { token })).body.balance as number;
    expect(await balance()).toBe(380);

    await s.recover();
    await s.recover(); // a repeated compensation changes nothing
    const view = await s.order(orderId);
    expect(view.status).toBe('COMPENSATED');
    expect(await balance()).toBe(500);
    expect(await skuCounters(s, 'seat-w')).toMatchObject({ available: 2, held: 0, confirmed: 0 });
    const refunds = await s.db.pool.query(
      "SELECT transfer_id, amount FROM wallet_transfers WHERE order_id = $1 AND kind = 'REFUND'",
      [orderId],
    );
    expect(refunds.rows).toEqual([{ transfer_id: `${orderId}/refund`, amount: 120 }]);
    expect((await s.statement()).lines.filter((l) => l.merchant_order === orderId)).toEqual([]);
    expect(await books(s)).toMatchObject({ sum: 0, drift: [], negative: [] });
    const report = (await s.recover()).body as { reconciliation: { mismatches: unknown[] } };
    expect(report.reconciliation.mismatches).toEqual([]);
  });
});
