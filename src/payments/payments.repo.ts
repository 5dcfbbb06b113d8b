import type { Executor, Tx } from '../platform/db.ts';
import type { Effect } from './effects.ts';

export interface NotificationRecord {
  notifyId: string;
  merchantOrder: string;
  kind: 'CHARGED' | 'DECLINED' | 'REFUNDED';
  amount: number;
  txn: string | null;
}

export async function insertNotification(tx: Tx, n: NotificationRecord, effect: Effect, needsAttention: boolean, now: Date): Promise<void> {
  await tx.query(
    `INSERT INTO payment_notifications (notify_id, merchant_order, kind, amount, txn, effect, needs_attention, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [n.notifyId, n.merchantOrder, n.kind, n.amount, n.txn, effect, needsAttention, now],
  );
}

export async function listNotifications(db: Executor, orderId: string) {
  const result = await db.query<{ notify_id: string; kind: string; amount: number; txn: string | null; effect: Effect; needs_attention: boolean; received_at: Date }>(
    'SELECT notify_id, kind, amount, txn, effect, needs_attention, received_at FROM payment_notifications WHERE merchant_order = $1 ORDER BY id',
    [orderId],
  );
  return result.rows.map((r) => ({ ...r, received_at: r.received_at.toISOString() }));
}

/** Notes on the order that a person must look at; never changes its status. */
export async function noteAttention(tx: Tx, orderId: string, note: string): Promise<void> {
  await tx.query(`UPDATE orders SET attention = $2 WHERE order_id = $1`, [orderId, note.slice(0, 500)]);
}

/** Per-SKU outcome counts for operators and the simulation: order statuses and notification effects. */
export async function skuOutcomes(db: Executor, tenantId: string, sku: string) {
  const statuses = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM orders WHERE tenant_id = $1 AND sku = $2 GROUP BY status ORDER BY status',
    [tenantId, sku],
  );
  const effects = await db.query<{ effect: string; n: number }>(
    `SELECT n.effect, count(*)::int AS n FROM payment_notifications n JOIN orders o ON o.order_id = n.merchant_order
     WHERE o.tenant_id = $1 AND o.sku = $2 GROUP BY n.effect ORDER BY n.effect`,
    [tenantId, sku],
  );
  return {
    statuses: Object.fromEntries(statuses.rows.map((r) => [r.status, r.n])),
    notification_effects: Object.fromEntries(effects.rows.map((r) => [r.effect, r.n])),
  };
}
