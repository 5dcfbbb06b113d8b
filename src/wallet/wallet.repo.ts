import type { Executor, Tx } from '../platform/db.ts';
import { invariant } from '../platform/errors.ts';

export const TRANSFER_KINDS = ['CREDIT', 'DEBIT', 'REFUND'] as const;
export type TransferKind = (typeof TRANSFER_KINDS)[number];

/** One account per buyer wallet, plus the tenant's revenue and its funding source (Formance's @world). */
export const FUNDING = 'funding';
export const userAccount = (userId: string) => `user:${userId}`;

/**
 * The tenant's revenue is REVENUE_BUCKETS rows, not one (issue 38 item 3): every wallet pay locks
 * and updates the revenue row it credits until its commit, so with one row all pays of a tenant
 * waited for each other's commit. A pay credits the bucket its order id hashes to; revenue is the
 * sum of the buckets. 64: more than the pool's connections (20), so concurrent pays seldom share a
 * bucket, and a tenant's revenue is still one index range of 64 rows to sum. Bucket 0 keeps the id
 * of the one row before (`revenue`): the transfers already posted name it, and they are immutable.
 * Changing the count later is safe: a refund debits the bucket its debit credited (refundToWallet),
 * not the bucket the order hashes to now.
 */
export const REVENUE_BUCKETS = 64;
export const REVENUE = 'revenue';
export const revenueAccount = (bucket: number) => (bucket === 0 ? REVENUE : `${REVENUE}:${bucket}`);
export const isRevenueAccount = (accountId: string) => /^revenue(:[1-9][0-9]{0,2})?$/.test(accountId);

/** The bucket an order's debit credits: FNV-1a of its id, so the same order always lands in the same row. */
export function revenueBucketOf(orderId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < orderId.length; i++) {
    hash ^= orderId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % REVENUE_BUCKETS;
}

export const REVENUE_ACCOUNTS: readonly string[] = Array.from({ length: REVENUE_BUCKETS }, (_, i) => revenueAccount(i));

export interface Transfer {
  tenantId: string;
  transferId: string;
  debitAccount: string;
  creditAccount: string;
  amount: number;
  kind: TransferKind;
  userId: string;
  orderId: string | null;
}

/**
 * DONE: posted now. DUPLICATE: the same transfer was posted before (idempotent by id).
 * EXISTS_DIFFERENT: that id carries another transfer (TigerBeetle's `exists_with_different_*`).
 * INSUFFICIENT_FUNDS: the debit account would go below zero; nothing was written.
 */
export type TransferOutcome = 'DONE' | 'DUPLICATE' | 'EXISTS_DIFFERENT' | 'INSUFFICIENT_FUNDS';

export const kindOf = (accountId: string) =>
  isRevenueAccount(accountId) ? 'REVENUE' : accountId === FUNDING ? 'FUNDING' : 'USER';

/** An account some transfer names: the row ensureAccounts creates when it is missing. */
export interface AccountRef {
  tenantId: string;
  accountId: string;
  /** The buyer, for a USER account. */
  userId: string;
}

// Byte order, as the locks' ORDER BY … COLLATE "C" sorts: JS's < on ASCII ids agrees with it.
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The accounts of `transfers`, each once, in (tenant, account) byte order: the order every lock on them takes. */
export function accountsOf(transfers: readonly Transfer[]): AccountRef[] {
  const accounts = new Map<string, AccountRef>();
  for (const t of transfers)
    for (const accountId of [t.debitAccount, t.creditAccount])
      accounts.set(JSON.stringify([t.tenantId, accountId]), { tenantId: t.tenantId, accountId, userId: t.userId });
  return [...accounts.values()].sort(
    (a, b) => byteOrder(a.tenantId, b.tenantId) || byteOrder(a.accountId, b.accountId),
  );
}

/**
 * The accounts exist afterwards: one statement (one round trip on the pay's path), rows in the
 * order given (accountsOf's, the order the lock that follows takes them). An existing row is left
 * as it is.
 */
export async function ensureAccounts(tx: Tx, accounts: readonly AccountRef[], now: Date): Promise<void> {
  await tx.query(
    `INSERT INTO wallet_accounts (tenant_id, account_id, kind, user_id, balance, created_at)
     SELECT a.tenant_id, a.account_id, a.kind, CASE WHEN a.kind = 'USER' THEN a.user_id END, 0, $5
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS a(tenant_id, account_id, kind, user_id, n)
     ORDER BY a.n
     ON CONFLICT DO NOTHING`,
    [
      accounts.map((a) => a.tenantId),
      accounts.map((a) => a.accountId),
      accounts.map((a) => kindOf(a.accountId)),
      accounts.map((a) => a.userId),
      now,
    ],
  );
}

function sameTransfer(a: Transfer, row: TransferRow): boolean {
  return (
    a.debitAccount === row.debit_account &&
    a.creditAccount === row.credit_account &&
    a.amount === row.amount &&
    a.kind === row.kind &&
    a.userId === row.user_id &&
    a.orderId === row.order_id
  );
}

interface TransferRow {
  transfer_id: string;
  debit_account: string;
  credit_account: string;
  amount: number;
  kind: TransferKind;
  user_id: string;
  order_id: string | null;
  at: Date;
}

/**
 * Posts one transfer in the caller's transaction, at most once per (tenant, transfer id).
 * Both account rows are locked first, in id byte order (two opposite transfers never deadlock); the
 * insert follows: a concurrent transfer with the same id waits on the accounts, then on the
 * unique key, and finds it (DUPLICATE), so no id moves money twice. Locking before the insert
 * matters: the transfer row's foreign keys take KEY SHARE on both accounts, and two transfers
 * that each held those and then asked for FOR UPDATE deadlocked (1 s each, then a retry) — hidden
 * while the SKU's row serialized wallet pays, exposed once confirming stopped taking it (issue 16).
 * The balance test is repeated by the table's CHECK, so even a buggy caller cannot overdraw. A
 * refusal is rolled back to a savepoint: nothing of it remains, and the caller's transaction goes on.
 */
export async function tryTransfer(tx: Tx, t: Transfer, now: Date): Promise<TransferOutcome> {
  invariant(t.amount > 0 && Number.isSafeInteger(t.amount), `transfer amount ${t.amount}`);
  await ensureAccounts(tx, accountsOf([t]), now);
  await tx.query('SAVEPOINT wallet_transfer');
  const locked = await tx.query<{ account_id: string; kind: string; balance: number }>(
    'SELECT account_id, kind, balance FROM wallet_accounts WHERE tenant_id = $1 AND account_id = ANY($2::text[]) ORDER BY account_id COLLATE "C" FOR UPDATE',
    [t.tenantId, [t.debitAccount, t.creditAccount]],
  );
  const inserted = await tx.query(
    `INSERT INTO wallet_transfers (tenant_id, transfer_id, debit_account, credit_account, amount, kind, user_id, order_id, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (tenant_id, transfer_id) DO NOTHING`,
    [t.tenantId, t.transferId, t.debitAccount, t.creditAccount, t.amount, t.kind, t.userId, t.orderId, now],
  );
  if (inserted.rowCount === 0) {
    await tx.query('RELEASE SAVEPOINT wallet_transfer');
    const existing = await tx.query<TransferRow>(
      'SELECT * FROM wallet_transfers WHERE tenant_id = $1 AND transfer_id = $2',
      [t.tenantId, t.transferId],
    );
    const row = existing.rows[0];
    invariant(row, `transfer ${t.transferId} conflicted but is not there`);
    return sameTransfer(t, row) ? 'DUPLICATE' : 'EXISTS_DIFFERENT';
  }
  const debit = locked.rows.find((r) => r.account_id === t.debitAccount);
  invariant(debit && locked.rows.length === 2, `accounts of transfer ${t.transferId} missing`);
  if (debit.kind !== 'FUNDING' && debit.balance < t.amount) {
    await tx.query('ROLLBACK TO SAVEPOINT wallet_transfer');
    await tx.query('RELEASE SAVEPOINT wallet_transfer');
    return 'INSUFFICIENT_FUNDS';
  }
  const moved = await tx.query(
    `UPDATE wallet_accounts SET balance = balance + CASE WHEN account_id = $2 THEN -$4::bigint ELSE $4::bigint END
     WHERE tenant_id = $1 AND account_id IN ($2, $3)`,
    [t.tenantId, t.debitAccount, t.creditAccount, t.amount],
  );
  invariant(moved.rowCount === 2, `transfer ${t.transferId} moved ${moved.rowCount} balances`);
  await tx.query('RELEASE SAVEPOINT wallet_transfer');
  return 'DONE';
}

export async function findBalance(db: Executor, tenantId: string, userId: string): Promise<number> {
  const result = await db.query<{ balance: number }>(
    'SELECT balance FROM wallet_accounts WHERE tenant_id = $1 AND account_id = $2',
    [tenantId, userAccount(userId)],
  );
  return result.rows[0]?.balance ?? 0;
}

/** A tenant's revenue: the sum of its buckets (0 before its first wallet pay). */
export async function findRevenue(db: Executor, tenantId: string): Promise<number> {
  const result = await db.query<{ revenue: number }>(
    'SELECT coalesce(sum(balance), 0)::bigint AS revenue FROM wallet_accounts WHERE tenant_id = $1 AND account_id = ANY($2::text[])',
    [tenantId, REVENUE_ACCOUNTS],
  );
  return result.rows[0]?.revenue ?? 0;
}

/** The revenue account an order's debit credited; undefined when the order has no debit. */
export async function findDebitRevenueAccount(db: Executor, tenantId: string, transferId: string) {
  const result = await db.query<{ credit_account: string }>(
    "SELECT credit_account FROM wallet_transfers WHERE tenant_id = $1 AND transfer_id = $2 AND kind = 'DEBIT'",
    [tenantId, transferId],
  );
  return result.rows[0]?.credit_account;
}

export interface TransferView {
  transfer_id: string;
  kind: TransferKind;
  amount: number;
  order_id?: string;
  at: string;
  /** A credit's author and reason (issue 48; credits from before the audit trail have none). */
  operator?: string;
  operator_tenant?: string;
  reason?: string;
}

// One wallet's history as an operator reads it; bounded so a page never grows without limit.
const TRANSFERS_PAGE = 500;

export async function listTransfers(db: Executor, tenantId: string, userId: string): Promise<TransferView[]> {
  const result = await db.query<
    TransferRow & { operator: string | null; operator_tenant: string | null; reason: string | null }
  >(
    `SELECT t.*, c.operator, c.operator_tenant, c.reason FROM wallet_transfers t
     LEFT JOIN wallet_credit_actions c ON c.tenant_id = t.tenant_id AND c.transfer_id = t.transfer_id
     WHERE t.tenant_id = $1 AND t.user_id = $2 ORDER BY t.at, t.transfer_id LIMIT ${TRANSFERS_PAGE}`,
    [tenantId, userId],
  );
  return result.rows.map((r) => ({
    transfer_id: r.transfer_id,
    kind: r.kind,
    amount: r.amount,
    ...(r.order_id ? { order_id: r.order_id } : {}),
    at: r.at.toISOString(),
    ...(r.operator && r.operator_tenant && r.reason
      ? { operator: r.operator, operator_tenant: r.operator_tenant, reason: r.reason }
      : {}),
  }));
}

/** The audit row of a credit (migration 182): append-only, kept after its Idempotency-Key is purged. */
export async function recordCreditAction(
  tx: Tx,
  owner: { tenantId: string; userId: string },
  transferId: string,
  amount: number,
  author: { operator: string; operatorTenant: string; reason: string },
  now: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO wallet_credit_actions (tenant_id, transfer_id, user_id, amount, operator, operator_tenant, reason, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [owner.tenantId, transferId, owner.userId, amount, author.operator, author.operatorTenant, author.reason, now],
  );
}

/** Who made a credit, when it was made after the audit trail began. */
export async function findCreditAuthor(
  db: Executor,
  tenantId: string,
  transferId: string,
): Promise<{ operator: string; operatorTenant: string; reason: string } | undefined> {
  const result = await db.query<{ operator: string; operatorTenant: string; reason: string }>(
    `SELECT operator, operator_tenant AS "operatorTenant", reason FROM wallet_credit_actions
     WHERE tenant_id = $1 AND transfer_id = $2`,
    [tenantId, transferId],
  );
  return result.rows[0];
}
