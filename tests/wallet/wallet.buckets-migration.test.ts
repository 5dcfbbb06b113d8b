import { afterAll, beforeAll, expect, it } from 'vitest';
import { inTx } from '../../src/platform/db.ts';
import { loadMigrations, migrate } from '../../src/platform/migrate.ts';
import { findRevenue, REVENUE_BUCKETS, refundToWallet, revenueBucketOf } from '../../src/wallet/index.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Migration 165 on existing data: the one revenue row becomes bucket 0 with its balance, the other
// buckets appear empty, and an order paid before it is refunded from bucket 0 (which holds its money).
let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase({ migrated: false });
});
afterAll(async () => db.drop());

it('W-11 existing revenue stays whole: bucket 0 = the old row, buckets 1..63 empty, the sum unchanged; an old order is refunded from bucket 0', async () => {
  const all = await loadMigrations();
  await migrate(
    db.url,
    all.filter((m) => m.version < 165),
  );
  // Before: a credit of 1,000 and a wallet pay of 700 into the one revenue row.
  await db.pool.query(
    `INSERT INTO wallet_accounts (tenant_id, account_id, kind, user_id, balance, created_at) VALUES
       ('t', 'funding', 'FUNDING', NULL, -1000, now()), ('t', 'user:u', 'USER', 'u', 300, now()), ('t', 'revenue', 'REVENUE', NULL, 700, now())`,
  );
  await db.pool.query(
    `INSERT INTO wallet_transfers (tenant_id, transfer_id, debit_account, credit_account, amount, kind, user_id, order_id, at) VALUES
       ('t', 'credit:k', 'funding', 'user:u', 1000, 'CREDIT', 'u', NULL, now()),
       ('t', 'old-order/pay', 'user:u', 'revenue', 700, 'DEBIT', 'u', 'old-order', now())`,
  );
  expect(revenueBucketOf('old-order')).not.toBe(0); // so the refund below proves it follows the debit
  expect(await migrate(db.url)).toEqual(all.filter((m) => m.version >= 165).map((m) => m.version));
  const buckets = await db.pool.query<{ account_id: string; balance: number }>(
    "SELECT account_id, balance FROM wallet_accounts WHERE tenant_id = 't' AND kind = 'REVENUE' ORDER BY account_id",
  );
  expect(buckets.rows).toHaveLength(REVENUE_BUCKETS);
  expect(buckets.rows.find((b) => b.account_id === 'revenue')?.balance).toBe(700);
  expect(buckets.rows.filter((b) => b.balance !== 0)).toHaveLength(1);
  expect(await findRevenue(db.pool, 't')).toBe(700);
  const refund = { tenantId: 't', userId: 'u', orderId: 'old-order', amount: 700, key: 'old-order/refund' };
  expect(await inTx(db.pool, (tx) => refundToWallet(tx, refund, new Date()))).toBe('DONE');
  const back = await db.pool.query("SELECT debit_account FROM wallet_transfers WHERE transfer_id = 'old-order/refund'");
  expect(back.rows).toEqual([{ debit_account: 'revenue' }]);
  expect(await findRevenue(db.pool, 't')).toBe(0);
  // Only revenue accounts carry revenue ids.
  await expect(
    db.pool.query(
      "INSERT INTO wallet_accounts (tenant_id, account_id, kind, user_id, balance, created_at) VALUES ('t', 'revenue:9', 'USER', 'x', 0, now())",
    ),
  ).rejects.toThrow(/wallet_accounts_revenue_id/);
});
