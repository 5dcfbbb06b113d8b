import type { Executor, Tx } from '../platform/db.ts';
import { mutant } from '../platform/mutations.ts';
import type { Effect } from '../orders/index.ts';
import type { ProviderName } from '../platform/provider.config.ts';

export interface NotificationRecord {
  /** The provider whose route received it (issue 48): ids are deduplicated per provider. */
  provider: ProviderName;
  notifyId: string;
  merchantOrder: string;
  kind: 'CHARGED' | 'DECLINED' | 'REFUNDED';
  amount: number;
  txn: string | null;
  /** The currency the provider names (Stripe's `currency`, lower case); undefined when it names none. */
  currency?: string;
}

/**
 * Records a notification with its effect unless its (provider, notify_id) is recorded already; then answers
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
             INSERT INTO payment_notifications (notify_id, merchant_order, kind, amount, txn, effect, needs_attention, received_at, provider)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (provider, notify_id) DO NOTHING RETURNING 1)
           SELECT EXISTS (SELECT 1 FROM ins) AS inserted,
                  (SELECT effect FROM payment_notifications WHERE provider = $9 AND notify_id = $1) AS first`,
    values: [n.notifyId, n.merchantOrder, n.kind, n.amount, n.txn, effect, needsAttention, now, n.provider],
  });
  const row = result.rows[0];
  if (row?.inserted) return { inserted: true };
  // The conflicting row committed after this statement's snapshot was taken: read it now.
  const first = row?.first ?? (await recordedEffect(tx, n.provider, n.notifyId));
  if (!first) throw new Error(`notification ${n.notifyId} conflicted with no recorded row`);
  return { inserted: false, first };
}

/**
 * The effect a provider's notify_id had when it was first recorded. A row recorded before migration
 * 180 has no provider: its notify_id alone still finds it (index payment_notifications_legacy_notify_id).
 */
export async function recordedEffect(
  db: Executor,
  provider: ProviderName,
  notifyId: string,
): Promise<Effect | undefined> {
  // `payments.notification.per-provider` (tests only) matches by notify_id alone, as before migration 180.
  const result = await db.query<{ effect: Effect }>(
    `SELECT effect FROM payment_notifications WHERE ${mutant('payments.notification.per-provider') ? '$1::text IS NOT NULL' : 'provider = $1'} AND notify_id = $2
     UNION ALL SELECT effect FROM payment_notifications WHERE provider IS NULL AND notify_id = $2 LIMIT 1`,
    [provider, notifyId],
  );
  return result.rows[0]?.effect;
}

export async function listNotifications(db: Executor, orderId: string) {
  const result = await db.query<{
    notify_id: string;
    provider: string | null;
    kind: string;
    amount: number;
    txn: string | null;
    effect: Effect;
    needs_attention: boolean;
    received_at: Date;
  }>(
    'SELECT notify_id, provider, kind, amount, txn, effect, needs_attention, received_at FROM payment_notifications WHERE merchant_order = $1 ORDER BY id',
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
