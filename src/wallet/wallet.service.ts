import type { Executor, Tx } from '../platform/db.ts';
import { businessMetrics } from '../platform/business-metrics.ts';
import { AppError, invariant } from '../platform/errors.ts';
import {
  findCreditAuthor,
  findDebitRevenueAccount,
  recordCreditAction,
  FUNDING,
  revenueAccount,
  revenueBucketOf,
  tryTransfer,
  userAccount,
  type Transfer,
  type TransferOutcome,
} from './wallet.repo.ts';
import { transferMany, TransfersRefused } from './wallet.many.ts';

export interface Owner {
  tenantId: string;
  userId: string;
}

/** The debit of an order is one transfer whose id derives from the order: at most one per order, ever. */
export const debitIdFor = (orderId: string) => `${orderId}/pay`;
/** Credits are named by the operator's Idempotency-Key, kept apart from order-derived ids. */
export const creditIdFor = (key: string) => `credit:${key}`;

function counted(kind: string, outcome: TransferOutcome): TransferOutcome {
  if (outcome === 'DONE') businessMetrics.walletTransfers.inc({ kind });
  if (outcome === 'INSUFFICIENT_FUNDS') businessMetrics.walletRefusals.inc({ kind });
  return outcome;
}

/** Who credits, and why (issue 48): kept in wallet_credit_actions, the credits' append-only audit trail. */
export interface CreditAuthor {
  operator: string;
  operatorTenant: string;
  reason: string;
}

/**
 * Puts money into a buyer's wallet from the tenant's funding account, and writes who did it and
 * why beside it, in the same transaction. Same id, other content: 422. Same id made by another
 * operator (another admin reusing the first one's Idempotency-Key): 409, neither replayed nor
 * made again — the credit is theirs. A credit from before the audit trail has no author to compare
 * and is replayed as before.
 */
export async function creditWallet(
  tx: Tx,
  owner: Owner,
  amount: number,
  transferId: string,
  author: CreditAuthor,
  now: Date,
): Promise<void> {
  const outcome = await tryTransfer(
    tx,
    {
      ...owner,
      transferId,
      debitAccount: FUNDING,
      creditAccount: userAccount(owner.userId),
      amount,
      kind: 'CREDIT',
      orderId: null,
    },
    now,
  );
  if (outcome === 'DONE') await recordCreditAction(tx, owner, transferId, amount, author, now);
  else {
    const first = await findCreditAuthor(tx, owner.tenantId, transferId);
    if (first && (first.operator !== author.operator || first.operatorTenant !== author.operatorTenant))
      throw new AppError(
        'IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR',
        `transfer ${transferId} is a credit another operator made with this Idempotency-Key`,
      );
  }
  if (outcome === 'EXISTS_DIFFERENT')
    throw new AppError('IDEMPOTENCY_KEY_REUSED', `transfer ${transferId} exists with other content`);
  invariant(outcome !== 'INSUFFICIENT_FUNDS', 'the funding account has no floor');
  counted('CREDIT', outcome);
}

/** The debit of one order: its buyer, its id, its amount. */
export interface OrderDebit extends Owner {
  orderId: string;
  amount: number;
}

/** An order's debit as a transfer: its id derives from the order, so there is at most one per order. */
const orderDebit = (d: OrderDebit): Transfer => ({
  tenantId: d.tenantId,
  userId: d.userId,
  transferId: debitIdFor(d.orderId),
  debitAccount: userAccount(d.userId),
  // One of the tenant's revenue buckets, by the order's id: pays of other orders rarely wait on it.
  creditAccount: revenueAccount(revenueBucketOf(d.orderId)),
  amount: d.amount,
  kind: 'DEBIT',
  orderId: d.orderId,
});

/**
 * Takes an order's amount from its buyer's wallet in the caller's transaction (the one that makes
 * the order PAID). INSUFFICIENT_FUNDS leaves nothing behind; DUPLICATE means this order was debited
 * before, which the caller's order lock makes a bug.
 */
export async function debitForOrder(
  tx: Tx,
  owner: Owner,
  orderId: string,
  amount: number,
  now: Date,
): Promise<TransferOutcome> {
  // An amount past 2^53 − 1 is more than any wallet holds (a credit is at most 10^10, a balance an
  // exact integer): the buyer's answer is too little money, 409, not tryTransfer's invariant (a 500
  // on every retry; issue 40). Nothing is written.
  if (!Number.isSafeInteger(amount)) return counted('DEBIT', 'INSUFFICIENT_FUNDS');
  return counted('DEBIT', await tryTransfer(tx, orderDebit({ ...owner, orderId, amount }), now));
}

/**
 * debitForOrder for a group of orders made PAID in the caller's transaction, in one round trip:
 * all debited, or the call throws (a balance too low, an amount past 2^53 − 1, a debit that exists)
 * and the caller rolls back and debits each alone, where each meets its own outcome.
 */
export async function debitForOrders(tx: Tx, debits: readonly OrderDebit[], now: Date): Promise<void> {
  if (debits.some((d) => !Number.isSafeInteger(d.amount) || d.amount <= 0))
    throw new TransfersRefused('an amount no wallet holds');
  await transferMany(tx, debits.map(orderDebit), now);
  businessMetrics.walletTransfers.inc({ kind: 'DEBIT' }, debits.length);
}

export interface WalletRefund extends Owner {
  orderId: string;
  amount: number;
  /** The order's refund key: the transfer id, so the refund happens once whoever asks again. */
  key: string;
}

/**
 * Gives a wallet-paid order's money back to its buyer, in the caller's transaction, once per key:
 * DONE the first time, DUPLICATE after. The same key for another amount or order is a bug.
 * The money leaves the revenue bucket the order's debit credited, so no bucket goes below zero (a
 * refund takes back exactly what its debit put there), whatever the bucket count was at the pay;
 * an order paid before the buckets was credited to `revenue`, bucket 0, and is refunded from it.
 */
export async function refundToWallet(tx: Tx, refund: WalletRefund, now: Date): Promise<'DONE' | 'DUPLICATE'> {
  const revenue =
    (await findDebitRevenueAccount(tx, refund.tenantId, debitIdFor(refund.orderId))) ??
    revenueAccount(revenueBucketOf(refund.orderId));
  const outcome = await tryTransfer(
    tx,
    {
      tenantId: refund.tenantId,
      userId: refund.userId,
      transferId: refund.key,
      debitAccount: revenue,
      creditAccount: userAccount(refund.userId),
      amount: refund.amount,
      kind: 'REFUND',
      orderId: refund.orderId,
    },
    now,
  );
  invariant(
    outcome === 'DONE' || outcome === 'DUPLICATE',
    `wallet refund ${refund.key} for ${refund.orderId}: ${outcome}`,
  );
  return counted('REFUND', outcome) as 'DONE' | 'DUPLICATE';
}

/** Whether an order was paid from a wallet: its debit transfer exists. */
export async function walletDebitOf(
  tx: Tx,
  tenantId: string,
  orderId: string,
): Promise<{ amount: number; userId: string } | undefined> {
  const result = await tx.query<{ amount: number; user_id: string }>(
    "SELECT amount, user_id FROM wallet_transfers WHERE tenant_id = $1 AND transfer_id = $2 AND kind = 'DEBIT'",
    [tenantId, debitIdFor(orderId)],
  );
  const row = result.rows[0];
  return row && { amount: row.amount, userId: row.user_id };
}

/** Whether a refund with this key was credited to a wallet (compensation resolves a lost answer with it). */
export async function walletRefundOf(db: Executor, tenantId: string, key: string): Promise<boolean> {
  const result = await db.query(
    "SELECT 1 FROM wallet_transfers WHERE tenant_id = $1 AND transfer_id = $2 AND kind = 'REFUND'",
    [tenantId, key],
  );
  return (result.rowCount ?? 0) > 0;
}
