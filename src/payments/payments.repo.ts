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
