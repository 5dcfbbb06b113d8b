import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTx } from '../../src/platform/db.ts';
import { convergeRefunding, paymentDeps } from '../../src/payments/index.ts';
import { refundToWallet } from '../../src/wallet/index.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { books, createSku, credit, order, TENANT, walletPay } from './support.ts';

describe('refunds of wallet-paid orders', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  async function walletPaid(user: string, sku: string) {
    await createSku(s, { sku, price: 300, stock: 1 });
    const buyer = await s.token(TENANT, user);
    await credit(s, user, 300);
    const id = await order(s, buyer, sku);
    expect((await walletPay(s, buyer, id)).body.status).toBe('PAID');
    return { id, buyer };
  }

  it('W-07 refundToWallet credits once per key in the caller transaction; the same key again changes nothing', async () => {
    // Proves the function other modules (compensation) call is idempotent by the order's refund key.
    const { id, buyer } = await walletPaid('wr1', 'wr1');
    const refund = { tenantId: TENANT, userId: 'wr1', orderId: id, amount: 300, key: `${id}/refund` };
    expect(await inTx(s.db.pool, (tx) => refundToWallet(tx, refund, s.clock.now()))).toBe('DONE');
    const again = await Promise.all(
      [1, 2, 3].map(() => inTx(s.db.pool, (tx) => refundToWallet(tx, refund, s.clock.now()))),
    );
    expect(again).toEqual(['DUPLICATE', 'DUPLICATE', 'DUPLICATE']);
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 300 });
    expect(await countRows(s.db, 'wallet_transfers', "order_id = $1 AND kind = 'REFUND'", [id])).toBe(1);
    // The same key for another amount is a bug in the caller: refused loudly, nothing written.
    await expect(
      inTx(s.db.pool, (tx) => refundToWallet(tx, { ...refund, amount: 299 }, s.clock.now())),
    ).rejects.toThrow(/EXISTS_DIFFERENT/);
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
  });

  it('W-08 a REFUNDING wallet-paid order is refunded to the wallet (not the provider) once, then REFUNDED', async () => {
    // Proves the refund path of the decider pays wallet money back to the wallet, once, whoever repeats it.
    const { id, buyer } = await walletPaid('wr2', 'wr2');
    // What a compensation (issue 17) leaves behind: a wallet-paid order whose money must go back.
    await s.db.pool.query("UPDATE orders SET status = 'REFUNDING' WHERE order_id = $1", [id]);
    const deps = paymentDeps(s.deps);
    const runs = await Promise.all([1, 2].map(() => convergeRefunding(deps, id)));
    expect(runs.map((r) => r.status)).toEqual(['REFUNDED', 'REFUNDED']);
    expect((await convergeRefunding(deps, id)).status).toBe('REFUNDED');
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 300 });
    expect(
      await countRows(s.db, 'wallet_transfers', "order_id = $1 AND kind = 'REFUND' AND transfer_id = $2", [
        id,
        `rf-${id}`,
      ]),
    ).toBe(1);
    expect(await countRows(s.db, 'order_transitions', "order_id = $1 AND to_status = 'REFUNDED'", [id])).toBe(1);
  });
});
