import type { Executor } from '../platform/db.ts';
import type { LedgerView } from './reconcile.rules.ts';

export interface WalletFacts {
  /** Per order: its DEBIT transfers as charges, its REFUND transfers as refunds. */
  byOrder: Map<string, LedgerView>;
  /** Accounts whose balance row is not the sum of their transfers. */
  drift: Array<{ tenant_id: string; account_id: string; balance: number; net: number }>;
  /** Tenants whose accounts do not sum to zero (every transfer debits one and credits another). */
  unbalanced: Array<{ tenant_id: string; sum: number }>;
}

/**
 * The wallet ledger read in the reconciliation's snapshot: the wallet is a second payment provider
 * whose books we keep ourselves, so its order-linked transfers join the provider's statement lines,
 * and its own double-entry invariants are checked besides.
 */
export async function readWalletFacts(db: Executor, tenantId?: string): Promise<WalletFacts> {
  const t = tenantId ?? null;
  const perOrder = await db.query<{ order_id: string; kind: string; n: number; total: number }>(
    `SELECT order_id, kind, count(*)::int AS n, sum(amount)::bigint AS total FROM wallet_transfers WHERE order_id IS NOT NULL AND ($1::text IS NULL OR tenant_id = $1) GROUP BY order_id, kind`,
    [t],
  );
  const byOrder = new Map<string, LedgerView>();
  for (const r of perOrder.rows) {
    const view = byOrder.get(r.order_id) ?? { charges: 0, charged: 0, refunds: 0, refunded: 0 };
    if (r.kind === 'DEBIT') {
      view.charges += r.n;
      view.charged += r.total;
    } else if (r.kind === 'REFUND') {
      view.refunds += r.n;
      view.refunded += r.total;
    }
    byOrder.set(r.order_id, view);
  }
  const drift = await db.query<{ tenant_id: string; account_id: string; balance: number; net: number }>(
    `SELECT a.tenant_id, a.account_id, a.balance,
            (coalesce(c.total, 0) - coalesce(d.total, 0))::bigint AS net
     FROM wallet_accounts a
     LEFT JOIN (SELECT tenant_id, credit_account AS account_id, sum(amount) AS total FROM wallet_transfers GROUP BY 1, 2) c USING (tenant_id, account_id)
     LEFT JOIN (SELECT tenant_id, debit_account AS account_id, sum(amount) AS total FROM wallet_transfers GROUP BY 1, 2) d USING (tenant_id, account_id)
     WHERE a.balance <> coalesce(c.total, 0) - coalesce(d.total, 0) AND ($1::text IS NULL OR a.tenant_id = $1)
     ORDER BY a.tenant_id, a.account_id`,
    [t],
  );
  const unbalanced = await db.query<{ tenant_id: string; sum: number }>(
    'SELECT tenant_id, sum(balance)::bigint AS sum FROM wallet_accounts WHERE ($1::text IS NULL OR tenant_id = $1) GROUP BY tenant_id HAVING sum(balance) <> 0 ORDER BY tenant_id',
    [t],
  );
  return { byOrder, drift: drift.rows, unbalanced: unbalanced.rows };
}

/** Adds the wallet's per-order views to the provider's. */
export function mergeLedgers(provider: Map<string, LedgerView>, wallet: ReadonlyMap<string, LedgerView>): number {
  let walletNet = 0;
  for (const [orderId, w] of wallet) {
    const view = provider.get(orderId) ?? { charges: 0, charged: 0, refunds: 0, refunded: 0 };
    provider.set(orderId, {
      charges: view.charges + w.charges,
      charged: view.charged + w.charged,
      refunds: view.refunds + w.refunds,
      refunded: view.refunded + w.refunded,
    });
    walletNet += w.charged - w.refunded;
  }
  return walletNet;
}
