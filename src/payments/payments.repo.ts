import type { Executor, Tx } from '../platform/db.ts';
import type { Effect } from '../orders/index.ts';

export interface NotificationRecord {
  notifyId: string;
  merchantOrder: string;
  kind: 'CHARGED' | 'DECLINED' | 'REFUNDED';
  amount: number;
  txn: string | null;
}

/** Records a notification once; false when its notify_id was recorded already (a concurrent copy won). */
/**
 * Records a notification with its effect unless its notify_id is recorded already; then answers
 * the effect recorded first. One statement: the conflict decides, not a read before the insert.
 */
export async function recordNotificationOnce(
  tx: Tx,
  n: NotificationRecord,
  effect: Effect,
  needsAttention: boolean,
  now: Date,
): Promise<{ inserted: true } | { inserted: false; first: Effect }> {
  const result = await tx.query<{ inserted: boolean; first: Effect | null }>({
    name: 'notification-record-once',
    text: `WITH ins AS (
             INSERT INTO payment_notifications (notify_id, merchant_order, kind, amount, txn, effect, needs_attention, received_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (notify_id) DO NOTHING RETURNING 1)
           SELECT EXISTS (SELECT 1 FROM ins) AS inserted,
                  (SELECT effect FROM payment_notifications WHERE notify_id = $1) AS first`,
    values: [n.notifyId, n.merchantOrder, n.kind, n.amount, n.txn, effect, needsAttention, now],
  });
  const row = result.rows[0];
  if (row?.inserted) return { inserted: true };
  // The conflicting row committed after this statement's snapshot was taken: read it now.
  const first = row?.first ?? (await recordedEffect(tx, n.notifyId));
  if (!first) throw new Error(`notification ${n.notifyId} conflicted with no recorded row`);
  return { inserted: false, first };
}

/** The effect a notify_id had when it was first recorded. */
export async function recordedEffect(db: Executor, notifyId: string): Promise<Effect | undefined> {
  const result = await db.query<{ effect: Effect }>('SELECT effect FROM payment_notifications WHERE notify_id = $1', [
    notifyId,
  ]);
  return result.rows[0]?.effect;
}

export async function listNotifications(db: Executor, orderId: string) {
  const result = await db.query<{
    notify_id: string;
    kind: string;
    amount: number;
    txn: string | null;
    effect: Effect;
    needs_attention: boolean;
    received_at: Date;
  }>(
    'SELECT notify_id, kind, amount, txn, effect, needs_attention, received_at FROM payment_notifications WHERE merchant_order = $1 ORDER BY id',
    [orderId],
  );
  return result.rows.map((r) => ({ ...r, received_at: r.received_at.toISOString() }));
}

/** Notification effects for a set of orders (a SKU's sale, for operators and the simulation). */
export async function notificationEffects(db: Executor, orderIds: readonly string[]): Promise<Record<string, number>> {
  const result = await db.query<{ effect: string; n: number }>(
    'SELECT effect, count(*)::int AS n FROM payment_notifications WHERE merchant_order = ANY($1::text[]) GROUP BY effect ORDER BY effect',
    [orderIds],
  );
  return Object.fromEntries(result.rows.map((r) => [r.effect, r.n]));
}

/** The orders a provider transaction id was notified for (the console's search, issue 36); index payment_notifications_txn. */
export async function findOrderIdsByTxn(db: Executor, txn: string): Promise<string[]> {
  const result = await db.query<{ merchant_order: string }>(
    'SELECT DISTINCT merchant_order FROM payment_notifications WHERE txn = $1 LIMIT 20',
    [txn],
  );
  return result.rows.map((r) => r.merchant_order);
}
