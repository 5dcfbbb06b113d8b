import { allOf, type Tx } from '../platform/db.ts';
import { invariant } from '../platform/errors.ts';
import { accountsOf, ensureAccounts, type Transfer } from './wallet.repo.ts';

/**
 * tryTransfer for many transfers of one kind in the caller's transaction, set-based (a group of
 * wallet pays sharing one commit, src/payments/pay.claims.ts): all of them or none.
 *
 * Three statements, sent together on a pipelined transaction (one round trip): the missing
 * accounts created (ensureAccounts); every account of the group locked in (tenant, account) byte
 * order, as tryTransfer's lock takes them, so a group and a single transfer never deadlock; then the
 * transfers inserted and each account's balance moved once, by the sum of its transfers (an
 * UPDATE … FROM with two source rows for one target row would apply one of them only).
 *
 * A refusal is an error, not an outcome: a balance that would go below zero fails the table's
 * CHECK, and a transfer id that exists already (never, for the debit of an order made PAID under
 * its lock in this transaction) fails the count. Either way the caller's transaction rolls back
 * whole, and its members go one by one (tryTransfer), each to its own outcome.
 */
export async function transferMany(tx: Tx, transfers: readonly Transfer[], now: Date): Promise<void> {
  if (transfers.length === 0) return;
  const kind = transfers[0]!.kind;
  invariant(
    transfers.every((t) => t.kind === kind && t.amount > 0 && Number.isSafeInteger(t.amount)),
    'transferMany: one kind, safe positive amounts',
  );
  const accounts = accountsOf(transfers);
  const column = <T>(pick: (t: Transfer) => T) => transfers.map(pick);
  const [, , moved] = await allOf(tx, [
    () => ensureAccounts(tx, accounts, now),
    () =>
      tx.query(
        `SELECT 1 FROM wallet_accounts
         WHERE (tenant_id, account_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
         ORDER BY tenant_id COLLATE "C", account_id COLLATE "C" FOR UPDATE`,
        [accounts.map((a) => a.tenantId), accounts.map((a) => a.accountId)],
      ),
    () =>
      tx.query<{ inserted: number; moved: number }>(
        `WITH t AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[])
             AS t(tenant_id, transfer_id, debit_account, credit_account, amount, user_id, order_id)),
         ins AS (
           INSERT INTO wallet_transfers (tenant_id, transfer_id, debit_account, credit_account, amount, kind, user_id, order_id, at)
           SELECT tenant_id, transfer_id, debit_account, credit_account, amount, $8, user_id, order_id, $9 FROM t
           ON CONFLICT (tenant_id, transfer_id) DO NOTHING
           RETURNING tenant_id, debit_account, credit_account, amount),
         d AS (
           SELECT tenant_id, account_id, sum(delta)::bigint AS delta FROM (
             SELECT tenant_id, debit_account AS account_id, -amount AS delta FROM ins
             UNION ALL SELECT tenant_id, credit_account, amount FROM ins) m
           GROUP BY tenant_id, account_id),
         u AS (
           UPDATE wallet_accounts a SET balance = a.balance + d.delta FROM d
           WHERE a.tenant_id = d.tenant_id AND a.account_id = d.account_id RETURNING 1)
         SELECT (SELECT count(*) FROM ins)::int AS inserted, (SELECT count(*) FROM u)::int AS moved`,
        [
          column((t) => t.tenantId),
          column((t) => t.transferId),
          column((t) => t.debitAccount),
          column((t) => t.creditAccount),
          column((t) => t.amount),
          column((t) => t.userId),
          column((t) => t.orderId),
          kind,
          now,
        ],
      ),
  ]);
  const row = moved.rows[0]!;
  // Fewer inserted: a transfer id was taken. The caller rolls the group back, and each goes alone.
  if (row.inserted !== transfers.length)
    throw new TransfersRefused(`${transfers.length - row.inserted} of ${transfers.length} transfer ids exist`);
  invariant(row.moved === accounts.length, `transfers moved ${row.moved} of ${accounts.length} balances`);
}

/** Some transfer of a set-based post would have been refused: nothing of the set may commit. */
export class TransfersRefused extends Error {}
