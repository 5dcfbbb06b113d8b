import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTx } from '../../src/platform/db.ts';
import { findRevenue, REVENUE_BUCKETS, refundToWallet, revenueBucketOf } from '../../src/wallet/index.ts';
import { channelClient } from '../../src/payments/index.ts';
import { reconcile } from '../../src/reconcile/index.ts';
import { startPaymentStack, type PaymentStack } from '../support/payments.ts';
import type { Stack } from '../support/stack.ts';
import { books, createSku, credit, order, TENANT, walletPay } from './support.ts';
import { everyOf } from '../support/every.ts';

const PRICE = 250;
const bucketId = (bucket: number) => (bucket === 0 ? 'revenue' : `revenue:${bucket}`);

/** Orders of distinct buyers, each with the money for one pay. */
async function walletOrders(s: Stack, prefix: string, n: number) {
  await createSku(s, { sku: prefix, price: PRICE, stock: n });
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const user = `${prefix}-${i}`;
      const token = await s.token(TENANT, user);
      await credit(s, user, PRICE);
      return { user, token, id: await order(s, token, prefix) };
    }),
  );
}

/** Resolves when some backend waits on a row lock of wallet_accounts (the pay blocked on the held bucket). */
async function waitForLockWait(s: Stack): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const waiting = await s.db.pool.query(
      "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%wallet_accounts%' AND datname = current_database()",
    );
    if ((waiting.rowCount ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no pay ever waited on the held bucket');
}

describe('revenue buckets (issue 38 item 3)', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
  });
  afterAll(async () => s.close());

  it('W-09 64 concurrent wallet pays of one tenant all commit: ledger zero, revenue = the sum of the buckets = what was paid, no balance below 0, reconciliation clean', async () => {
    // Proves spreading the credit side keeps the double-entry books whole under real concurrency.
    const orders = await walletOrders(s, 'wb9', 64);
    const answers = await Promise.all(orders.map((o) => walletPay(s, o.token, o.id)));
    expect(answers.map((a) => [a.status, a.body.status])).toEqual(orders.map(() => [200, 'PAID']));
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
    expect(await findRevenue(s.db.pool, TENANT)).toBe(64 * PRICE);
    const buckets = await s.db.pool.query<{ account_id: string; balance: number }>(
      "SELECT account_id, balance FROM wallet_accounts WHERE tenant_id = $1 AND kind = 'REVENUE'",
      [TENANT],
    );
    expect(everyOf(buckets.rows, (b) => b.balance >= 0)).toBe(true);
    // Each debit credited the bucket its order hashes to; 64 orders over 64 buckets use many of them.
    const credited = await s.db.pool.query<{ order_id: string; credit_account: string }>(
      "SELECT order_id, credit_account FROM wallet_transfers WHERE tenant_id = $1 AND kind = 'DEBIT'",
      [TENANT],
    );
    for (const row of credited.rows) expect(row.credit_account).toBe(bucketId(revenueBucketOf(row.order_id)));
    expect(new Set(credited.rows.map((r) => r.credit_account)).size).toBeGreaterThan(REVENUE_BUCKETS / 4);
    for (const o of orders.slice(0, 3))
      expect((await s.call('GET', '/v1/wallet', { token: o.token })).body).toEqual({ balance: 0 });
    const report = await reconcile(s.db.pool, channelClient(s.channel.url, 5_000), TENANT);
    expect([report.mismatches, report.pending_orders]).toEqual([[], []]);
    expect(report.totals.wallet_net).toBe(64 * PRICE);
  });

  it('W-10 a pay whose bucket is locked elsewhere waits, a pay hashing to another bucket commits meanwhile; refunds give back from the bucket the debit credited', async () => {
    // Proves the contention is gone: with one revenue row, every pay waited on the holder (the control).
    const orders = await walletOrders(s, 'wb10', 8);
    const first = orders[0]!;
    const held = revenueBucketOf(first.id);
    const other = orders.find((o) => revenueBucketOf(o.id) !== held);
    if (!other) throw new Error('all eight orders hash to one bucket');
    await s.db.pool.query(
      `INSERT INTO wallet_accounts (tenant_id, account_id, kind, balance, created_at) VALUES ($1, $2, 'REVENUE', 0, now()) ON CONFLICT DO NOTHING`,
      [TENANT, bucketId(held)],
    );
    const holder = await s.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM wallet_accounts WHERE tenant_id = $1 AND account_id = $2 FOR UPDATE', [
        TENANT,
        bucketId(held),
      ]);
      // Negative control: the pay of the order that hashes to the held bucket blocks on it.
      let blockedDone = false;
      const blocked = walletPay(s, first.token, first.id).then((r) => ((blockedDone = true), r));
      await waitForLockWait(s);
      // The pay on another bucket commits while that lock is still held.
      const free = await walletPay(s, other.token, other.id);
      expect([free.status, free.body.status]).toEqual([200, 'PAID']);
      expect(blockedDone).toBe(false);
      await holder.query('COMMIT');
      const late = await blocked;
      expect([late.status, late.body.status]).toEqual([200, 'PAID']);
    } finally {
      holder.release();
    }
    // The refund leaves the bucket the debit credited (never below 0), once per key.
    const refund = {
      tenantId: TENANT,
      userId: other.user,
      orderId: other.id,
      amount: PRICE,
      key: `${other.id}/refund`,
    };
    expect(await inTx(s.db.pool, (tx) => refundToWallet(tx, refund, s.clock.now()))).toBe('DONE');
    const legs = await s.db.pool.query<{ kind: string; debit_account: string; credit_account: string }>(
      'SELECT kind, debit_account, credit_account FROM wallet_transfers WHERE order_id = $1 ORDER BY kind',
      [other.id],
    );
    const bucket = bucketId(revenueBucketOf(other.id));
    expect(legs.rows).toEqual([
      { kind: 'DEBIT', debit_account: `user:${other.user}`, credit_account: bucket },
      { kind: 'REFUND', debit_account: bucket, credit_account: `user:${other.user}` },
    ]);
    expect((await s.call('GET', '/v1/wallet', { token: other.token })).body).toEqual({ balance: PRICE });
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
  });
});
