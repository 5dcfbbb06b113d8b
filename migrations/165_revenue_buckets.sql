-- Issue 38 item 3: a tenant's revenue is REVENUE_BUCKETS (64) rows instead of one. Every wallet pay
-- locked and updated the tenant's one REVENUE row until its commit, so wallet pays of a tenant ran
-- one commit at a time. A pay now credits the bucket its order id hashes to (src/wallet/wallet.repo.ts);
-- the tenant's revenue is the sum of its buckets, and each bucket keeps the ledger's rules on its own
-- (its balance = its transfers, never below zero).
--
-- Bucket 0 IS the existing row `revenue`, with its balance: nothing moves, so the tenant's revenue
-- (the sum) is exactly what the one row held. It cannot be renamed anyway: the transfers already
-- posted name it through their foreign keys, and transfers are immutable. A refund of an order paid
-- before this migration debits the account its debit credited, `revenue`, which holds that money.
-- Buckets 1..63 are `revenue:<n>`.

-- Revenue accounts and only they carry revenue ids (a prefix test: cheap on every balance update).
ALTER TABLE wallet_accounts ADD CONSTRAINT wallet_accounts_revenue_id
  CHECK ((kind = 'REVENUE') = (account_id = 'revenue' OR account_id LIKE 'revenue:%'));

-- The other buckets of every tenant that has revenue, empty (a pay creates a missing one as well).
INSERT INTO wallet_accounts (tenant_id, account_id, kind, user_id, balance, created_at)
SELECT a.tenant_id, 'revenue:' || b, 'REVENUE', NULL, 0, a.created_at
FROM wallet_accounts a CROSS JOIN generate_series(1, 63) AS b
WHERE a.account_id = 'revenue'
ON CONFLICT DO NOTHING;
