import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTx } from '../../src/platform/db.ts';
import { transferMany, TransfersRefused } from '../../src/wallet/wallet.many.ts';
import { debitIdFor } from '../../src/wallet/index.ts';
import { channelClient } from '../../src/payments/index.ts';
import { reconcile } from '../../src/reconcile/index.ts';
import { startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { books, createSku, credit, order, TENANT, walletPay } from './support.ts';
import { everyOf } from '../support/every.ts';

// Issue 38 item 3: wallet pays share one commit, as card pays' claims do (src/payments/pay.claims.ts
// groupClaims with beginWalletPays): a group's keys, its orders made PAID and all its debits go in
// one transaction, and a group with any refusal rolls back and lets each pay go alone.

const PRICE = 300;

const balanceOf = async (s: PaymentStack, user: string) =>
  (
    await s.db.pool.query<{ balance: number }>(
      'SELECT balance FROM wallet_accounts WHERE tenant_id = $1 AND account_id = $2',
      [TENANT, `user:${user}`],
    )
  ).rows[0]?.balance;

describe('wallet pays in groups (issue 38 item 3)', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
  });
  afterAll(async () => s.close());

  it('WG-01 96 concurrent wallet pays share commits: each its own answer (PAID, 409 for the short wallet, 404 for a stranger), debits in fewer transactions than pays, books whole, reconciliation clean', async () => {
    await createSku(s, { sku: 'wg1', price: PRICE, stock: 200 });
    // 30 buyers with the money for three orders each; one buyer with money for one of its three.
    const buyers = await Promise.all(
      Array.from({ length: 31 }, async (_, i) => {
        const user = `wg1-${i}`;
        const token = await s.token(TENANT, user);
        await credit(s, user, i === 30 ? PRICE : 3 * PRICE);
        const ids = [await order(s, token, 'wg1'), await order(s, token, 'wg1'), await order(s, token, 'wg1')];
        return { user, token, ids };
      }),
    );
    const stranger = await s.token(TENANT, 'wg1-stranger');
    const pays = buyers.flatMap((b) => b.ids.map((id) => ({ user: b.user, token: b.token, id })));
    // A stranger asks to pay buyer 0's first order with their own wallet, in the same burst.
    const answers = await Promise.all([
      ...pays.map((p, i) => walletPay(s, p.token, p.id, `wg1-pay-${i}`)),
      walletPay(s, stranger, buyers[0]!.ids[0]!),
    ]);
    const strangers = answers.pop()!;
    expect([strangers.status, strangers.body.code]).toEqual([404, 'ORDER_NOT_FOUND']);
    const tally: Record<string, number> = {};
    for (const a of answers) {
      const cell = `${a.status} ${a.body.code ?? a.body.status}`;
      tally[cell] = (tally[cell] ?? 0) + 1;
    }
    expect(tally).toEqual({ '200 PAID': 91, '409 INSUFFICIENT_FUNDS': 2 });
    const short = answers.slice(90).filter((a) => a.status === 200);
    expect(short).toHaveLength(1);
    for (const b of buyers) expect(await balanceOf(s, b.user)).toBe(0);
    // Each PAID order has exactly its one debit, of its amount, and every other order none.
    const debits = await s.db.pool.query<{ order_id: string; amount: number; tx: string }>(
      "SELECT order_id, amount, xmin::text AS tx FROM wallet_transfers WHERE tenant_id = $1 AND kind = 'DEBIT' AND user_id LIKE 'wg1-%'",
      [TENANT],
    );
    const paid = await s.db.pool.query<{ order_id: string }>(
      "SELECT order_id FROM orders WHERE tenant_id = $1 AND user_id LIKE 'wg1-%' AND status = 'PAID'",
      [TENANT],
    );
    expect(debits.rows.map((r) => r.order_id).sort()).toEqual(paid.rows.map((r) => r.order_id).sort());
    expect(everyOf(debits.rows, (r) => r.amount === PRICE)).toBe(true);
    // The grouping itself: the 91 debits were written by fewer transactions than pays.
    expect(new Set(debits.rows.map((r) => r.tx)).size).toBeLessThan(91);
    // Every key replays its first answer, byte for byte.
    const again = await Promise.all(pays.slice(0, 6).map((p, i) => walletPay(s, p.token, p.id, `wg1-pay-${i}`)));
    expect(again.map((a) => a.text)).toEqual(answers.slice(0, 6).map((a) => a.text));
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
    const report = await reconcile(s.db.pool, channelClient(s.channel.url, 5_000), TENANT);
    expect([report.mismatches, report.pending_orders]).toEqual([[], []]);
  });

  it('WG-03 a wallet pay and a card pay of the same order at once, 20 orders: each order paid once, by one of them, with one debit or one charge, never both', async () => {
    await createSku(s, { sku: 'wg3', price: PRICE, stock: 20 });
    const token = await s.token(TENANT, 'wg3');
    await credit(s, 'wg3', 20 * PRICE);
    const ids = await Promise.all(Array.from({ length: 20 }, () => order(s, token, 'wg3')));
    const answers = await Promise.all(
      ids.map((id, i) =>
        Promise.all([
          walletPay(s, token, id, `wg3-w-${i}`),
          s.call('POST', `/v1/orders/${id}/pay`, { token, body: {}, headers: { 'idempotency-key': `wg3-c-${i}` } }),
        ]),
      ),
    );
    let byWallet = 0;
    for (const [i, [w, c]] of answers.entries()) {
      const wonByWallet = w.status === 200 && w.body.status === 'PAID';
      const wonByCard = c.status === 200 && c.body.status === 'PAID';
      expect([ids[i], wonByWallet !== wonByCard]).toEqual([ids[i], true]);
      if (wonByWallet) byWallet++;
      const debits = await s.db.pool.query("SELECT 1 FROM wallet_transfers WHERE order_id = $1 AND kind = 'DEBIT'", [
        ids[i],
      ]);
      expect([ids[i], debits.rowCount, await s.chargeRequests(ids[i])]).toEqual([
        ids[i],
        wonByWallet ? 1 : 0,
        wonByWallet ? 0 : 1,
      ]);
      expect((await s.order(ids[i]!)).status).toBe('PAID');
    }
    expect(await balanceOf(s, 'wg3')).toBe((20 - byWallet) * PRICE);
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
  });

  it('WG-02 transferMany: two debits of one wallet move it by their sum; a set that would overdraw or reuse an id writes nothing', async () => {
    await credit(s, 'wg2', 500);
    const now = new Date();
    const debit = (orderId: string, amount: number) => ({
      tenantId: TENANT,
      userId: 'wg2',
      transferId: debitIdFor(orderId),
      debitAccount: 'user:wg2',
      creditAccount: 'revenue:7',
      amount,
      kind: 'DEBIT' as const,
      orderId,
    });
    await inTx(s.db.pool, (tx) => transferMany(tx, [debit('wg2-a', 100), debit('wg2-b', 150)], now));
    expect(await balanceOf(s, 'wg2')).toBe(250);
    // 200 + 100 > 250: the CHECK refuses the summed move, nothing of the set commits.
    await expect(
      inTx(s.db.pool, (tx) => transferMany(tx, [debit('wg2-c', 200), debit('wg2-d', 100)], now)),
    ).rejects.toMatchObject({ code: '23514' });
    // wg2-a exists: the set is refused whole, wg2-e with it.
    await expect(
      inTx(s.db.pool, (tx) => transferMany(tx, [debit('wg2-a', 100), debit('wg2-e', 10)], now)),
    ).rejects.toBeInstanceOf(TransfersRefused);
    expect(await balanceOf(s, 'wg2')).toBe(250);
    const ids = await s.db.pool.query<{ transfer_id: string }>(
      "SELECT transfer_id FROM wallet_transfers WHERE user_id = 'wg2' AND kind = 'DEBIT' ORDER BY transfer_id",
    );
    expect(ids.rows.map((r) => r.transfer_id)).toEqual([debitIdFor('wg2-a'), debitIdFor('wg2-b')]);
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
  });
});
