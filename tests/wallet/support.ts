import { createSku, TENANT } from '../support/fixtures.ts';
import type { Stack } from '../support/stack.ts';

export { createSku, TENANT };

let keys = 0;

/** An admin credit through the API; throws unless 201. */
export async function credit(s: Stack, user: string, amount: number, key = `credit-${++keys}`) {
  const admin = await s.token(TENANT, 'ops', 'admin');
  const result = await s.call('POST', `/v1/admin/wallets/${user}/credits`, {
    token: admin,
    body: { amount, reason: 'test top-up' },
    headers: { 'idempotency-key': key },
  });
  if (result.status !== 201) throw new Error(`credit failed: ${result.status} ${result.text}`);
  return result;
}

export async function order(s: Stack, token: string, sku: string) {
  const result = await s.call('POST', '/v1/orders', {
    token,
    body: { sku },
    headers: { 'idempotency-key': `o-${++keys}` },
  });
  if (result.status !== 201) throw new Error(`order failed: ${result.status} ${result.text}`);
  return result.body.order_id as string;
}

export const walletPay = (s: Stack, token: string, orderId: string, key = `wp-${++keys}`) =>
  s.call('POST', `/v1/orders/${orderId}/pay`, {
    token,
    body: { method: 'wallet' },
    headers: { 'idempotency-key': key },
  });

/** The ledger's own books: every balance against its transfers, and the whole ledger's sum. */
export async function books(s: Stack) {
  const rows = await s.db.pool.query<{ account_id: string; balance: number; net: number }>(
    `SELECT a.account_id, a.balance,
            coalesce((SELECT sum(amount) FROM wallet_transfers t WHERE t.tenant_id = a.tenant_id AND t.credit_account = a.account_id), 0)
          - coalesce((SELECT sum(amount) FROM wallet_transfers t WHERE t.tenant_id = a.tenant_id AND t.debit_account = a.account_id), 0) AS net
     FROM wallet_accounts a`,
  );
  return {
    sum: rows.rows.reduce((acc, r) => acc + r.balance, 0),
    drift: rows.rows.filter((r) => r.balance !== r.net),
    negative: rows.rows.filter((r) => r.account_id.startsWith('user:') && r.balance < 0),
  };
}
