import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { inTx, pgCode, type Db, type Executor, type Tx } from '../platform/db.ts';
import { ROOT } from '../platform/root.ts';
import { KeyedMutex } from './keyed-mutex.ts';
import { createPgFulfilments } from './fulfilments.pg.ts';
import {
  RefundKeyConflict,
  type AccountBook,
  type AccountMove,
  type ChargeRecord,
  type LedgerStore,
  type LineDraft,
  type StatementLine,
} from './ledger.ts';

// The channel's own tables. They live in the channel's own database (never the service's), and
// the store creates them itself, so the channel needs no migration step of the service.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS channel_charges (
  merchant_order text PRIMARY KEY CHECK (char_length(merchant_order) BETWEEN 1 AND 255),
  status text NOT NULL CHECK (status IN ('CHARGED', 'DECLINED', 'CLOSED', 'REFUNDED')),
  amount bigint CHECK (amount > 0),
  txn text UNIQUE,
  notify_url text,
  refund_key text CONSTRAINT channel_charges_refund_key_unique UNIQUE,
  refund_id text UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'CLOSED') = (amount IS NULL)),
  CHECK ((status = 'REFUNDED') = (refund_id IS NOT NULL))
);
CREATE TABLE IF NOT EXISTS channel_lines (
  seq bigserial PRIMARY KEY,
  type text NOT NULL CHECK (type IN ('CHARGE', 'REFUND')),
  merchant_order text NOT NULL REFERENCES channel_charges (merchant_order),
  amount bigint NOT NULL CHECK (amount > 0),
  ref text NOT NULL UNIQUE,
  at timestamptz NOT NULL DEFAULT now()
);`;

// Advisory locks of the channel, in their own class (the two-int key space never meets the
// one-int key space the migrator uses). Key 0 guards schema creation; orders use hashtext().
const LOCK_CLASS = 7_294_630;
const SCHEMA_LOCK_KEY = 0;
// Key 1 orders the lines: held from a line's seq to its commit, so seqs become visible in order and
// a statement cursor never passes a line that commits later. Only money movements take it.
const LINE_ORDER_LOCK_KEY = 1;
// A merchant order is held only for a few statements; waiting longer than this is a fault.
const ORDER_LOCK_TIMEOUT_MS = 10_000;

interface ChargeRow {
  merchant_order: string;
  status: ChargeRecord['status'];
  amount: number | null;
  txn: string | null;
  notify_url: string | null;
  refund_key: string | null;
  refund_id: string | null;
}

function toRecord(row: ChargeRow): ChargeRecord {
  return {
    merchantOrder: row.merchant_order,
    status: row.status,
    amount: row.amount,
    txn: row.txn,
    notifyUrl: row.notify_url,
    refundKey: row.refund_key,
    refundId: row.refund_id,
  };
}

/**
 * Serializes every operation on one merchant order across connections and processes. An
 * advisory lock rather than `FOR UPDATE`, because the first charge or close of an order has no
 * row to lock yet. Collisions of hashtext() only serialize two unrelated orders, never merge them.
 */
async function lockMerchantOrder(tx: Tx, merchantOrder: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, merchantOrder]);
}

async function findCharge(db: Executor, merchantOrder: string): Promise<ChargeRecord | undefined> {
  const result = await db.query<ChargeRow>(
    'SELECT merchant_order, status, amount, txn, notify_url, refund_key, refund_id FROM channel_charges WHERE merchant_order = $1',
    [merchantOrder],
  );
  const row = result.rows[0];
  return row ? toRecord(row) : undefined;
}

async function findRefundKeyOwner(db: Executor, refundKey: string): Promise<string | undefined> {
  const result = await db.query<{ merchant_order: string }>(
    'SELECT merchant_order FROM channel_charges WHERE refund_key = $1',
    [refundKey],
  );
  return result.rows[0]?.merchant_order;
}

async function saveCharge(tx: Tx, record: ChargeRecord): Promise<void> {
  await tx.query(
    `INSERT INTO channel_charges (merchant_order, status, amount, txn, notify_url, refund_key, refund_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (merchant_order) DO UPDATE SET status = EXCLUDED.status, refund_key = EXCLUDED.refund_key,
       refund_id = EXCLUDED.refund_id, updated_at = now()`,
    [
      record.merchantOrder,
      record.status,
      record.amount,
      record.txn,
      record.notifyUrl,
      record.refundKey,
      record.refundId,
    ],
  );
}

async function insertLine(tx: Tx, line: LineDraft): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, LINE_ORDER_LOCK_KEY]);
  await tx.query('INSERT INTO channel_lines (type, merchant_order, amount, ref) VALUES ($1, $2, $3, $4)', [
    line.type,
    line.merchantOrder,
    line.amount,
    line.ref,
  ]);
}

// The customer accounts' tables: one file, the service's migration 153, applied here to the
// channel's own database (its statements are idempotent).
const ACCOUNTS_SCHEMA_FILE = path.join(ROOT, 'migrations', '153_channel_accounts.sql');

async function ensureSchema(pool: Db): Promise<void> {
  const accounts = await readFile(ACCOUNTS_SCHEMA_FILE, 'utf8');
  // Two channels starting at once would race on CREATE TABLE IF NOT EXISTS (it is not atomic).
  await inTx(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, SCHEMA_LOCK_KEY]);
    await tx.query(SCHEMA);
    await tx.query(accounts);
  });
}

async function findBalance(db: Executor, customer: string): Promise<number | undefined> {
  const result = await db.query<{ balance: number }>('SELECT balance FROM channel_accounts WHERE customer = $1', [
    customer,
  ]);
  return result.rows[0]?.balance;
}

/** FOR UPDATE: two charges of one customer (two merchant orders, two locks) decide one after the other. */
async function lockBalance(tx: Tx, customer: string): Promise<number | undefined> {
  const result = await tx.query<{ balance: number }>(
    'SELECT balance FROM channel_accounts WHERE customer = $1 FOR UPDATE',
    [customer],
  );
  return result.rows[0]?.balance;
}

/**
 * A charge's or refund's effect on a customer account, in the transaction that writes the charge
 * record (the merchant order's lock held). A debit of a customer without an account does nothing;
 * a debit past the balance fails the CHECK (the decision declined it first). A give-back happens
 * once per merchant order.
 */
async function moveAccount(tx: Tx, merchantOrder: string, account: AccountMove): Promise<void> {
  if (account.kind === 'DEBIT') {
    await tx.query(
      `WITH debited AS (UPDATE channel_accounts SET balance = balance - $3 WHERE customer = $2 RETURNING customer)
       INSERT INTO channel_account_charges (merchant_order, customer, amount) SELECT $1, customer, $3 FROM debited`,
      [merchantOrder, account.customer, account.amount],
    );
    return;
  }
  await tx.query(
    `WITH back AS (UPDATE channel_account_charges SET given_back = true
                   WHERE merchant_order = $1 AND NOT given_back RETURNING customer, amount)
     UPDATE channel_accounts a SET balance = a.balance + back.amount FROM back WHERE a.customer = back.customer`,
    [merchantOrder],
  );
}

/** The accounts as the control API sets and reads them. */
function pgAccountBook(pool: Db): AccountBook {
  return {
    async set(customer, balance) {
      await pool.query(
        `INSERT INTO channel_accounts (customer, balance) VALUES ($1, $2)
         ON CONFLICT (customer) DO UPDATE SET balance = EXCLUDED.balance`,
        [customer, balance],
      );
    },
    get: (customer) => findBalance(pool, customer),
    async clear() {
      await pool.query('TRUNCATE channel_account_charges, channel_accounts');
    },
  };
}

/** The ledger in PostgreSQL; every change is committed before the caller is answered. */
export async function createPgLedger(pool: Db): Promise<LedgerStore> {
  await ensureSchema(pool);
  // Queue in process first, so a burst on one order waits in memory rather than holding a
  // pooled connection each while blocked on the advisory lock.
  const mutex = new KeyedMutex();
  return {
    withOrder(merchantOrder, decide) {
      const run = (tx: Tx) => transact(tx, merchantOrder, decide);
      return mutex.run(merchantOrder, () => inTx(pool, run, { lockTimeoutMs: ORDER_LOCK_TIMEOUT_MS }));
    },
    async statement(merchantOrder, page) {
      const result = await pool.query<{
        type: LineDraft['type'];
        merchant_order: string;
        amount: number;
        ref: string;
        at: Date;
        seq: string;
      }>(
        `SELECT type, merchant_order, amount, ref, at, seq FROM channel_lines
         WHERE ($1::text IS NULL OR merchant_order = $1) AND seq > $2 ORDER BY seq LIMIT $3`,
        [merchantOrder ?? null, page?.after ?? 0, page?.limit ?? null],
      );
      return result.rows.map((row): StatementLine => ({
        seq: Number(row.seq),
        type: row.type,
        merchantOrder: row.merchant_order,
        amount: row.amount,
        ref: row.ref,
        at: row.at.toISOString(),
      }));
    },
    async reset() {
      await pool.query('TRUNCATE channel_lines, channel_charges RESTART IDENTITY');
    },
    fulfilments: await createPgFulfilments(pool),
    accounts: pgAccountBook(pool),
  };
}

type Decide = Parameters<LedgerStore['withOrder']>[1];

async function transact(tx: Tx, merchantOrder: string, decide: Decide) {
  await lockMerchantOrder(tx, merchantOrder);
  const decision = await decide({
    current: await findCharge(tx, merchantOrder),
    refundKeyOwner: (key) => findRefundKeyOwner(tx, key),
    balanceOf: (customer) => lockBalance(tx, customer),
  });
  if (decision.write) {
    try {
      await saveCharge(tx, decision.write.record);
    } catch (error) {
      // Another order took this refund key between our check and our write (it holds another lock).
      const constraint = (error as { constraint?: string }).constraint;
      if (pgCode(error) === '23505' && constraint === 'channel_charges_refund_key_unique')
        throw new RefundKeyConflict(String(decision.write.record.refundKey));
      throw error;
    }
    if (decision.write.account) await moveAccount(tx, merchantOrder, decision.write.account);
    if (decision.write.line) await insertLine(tx, decision.write.line);
  }
  return decision.outcome;
}
