import { inTx, type Db } from '../src/platform/db.ts';
import type { ChannelClient } from '../src/payments/index.ts';
import { reconcile } from '../src/reconcile/index.ts';

// The recovery run's data: `orders` orders left UNKNOWN by a provider outage (CREATED → PAYING →
// UNKNOWN, version 3, the unit still HELD), written with set-based SQL as the pay path would have
// left them; at the provider, every order but each `unchargedEvery`-th was charged (the charge
// went through, its answer was lost), the others never reached it. A tenant of its own, so the
// other runs' orders do not enter the checks or the reconciliation.

export const RECOVERY_TENANT = 'bench-recovery';
const SKU = 'recovery/sku';
const ORDER_PREFIX = 'bench-rec-';
const PRICE_MINOR = 1990;
const UNKNOWN_VERSION = 3;
// Charging the seeded orders at the provider (set-up, not timed): calls in flight.
const SEED_CONCURRENCY = 32;

export const orderIdOf = (i: number) => `${ORDER_PREFIX}${i}`;
export const isCharged = (i: number, unchargedEvery: number) => i % unchargedEvery !== 0;

export async function seedUnknownOrders(db: Db, orders: number): Promise<void> {
  const args = [RECOVERY_TENANT, SKU, ORDER_PREFIX, orders];
  await db.query(
    `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, hold_ttl_ms, created_at)
     VALUES ($1, $2, 'bench recovery SKU', $3, $4, 0, $4, 3600000, now())`,
    [RECOVERY_TENANT, SKU, PRICE_MINOR, orders],
  );
  await db.query(
    `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
     SELECT $1, $3 || i || '/r1', 'buyer-' || (i % 1000), $2, 1, 'HELD', now() + interval '1 hour', now(), now()
     FROM generate_series(1, $4::int) AS i`,
    args,
  );
  // Older than any stale threshold: the pay that left them UNKNOWN is long over.
  await db.query(
    `INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
     SELECT $3 || i, $1, 'buyer-' || (i % 1000), $2, 1, $5, 'UNKNOWN', $6, $3 || i || '/r1', now() - interval '10 minutes', now() - interval '10 minutes'
     FROM generate_series(1, $4::int) AS i`,
    [...args, PRICE_MINOR, UNKNOWN_VERSION],
  );
  await db.query(
    `INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at)
     SELECT $1 || i, t.from_status, t.to_status, t.version, t.reason, now() - interval '10 minutes'
     FROM generate_series(1, $2::int) AS i,
          (VALUES (NULL, 'CREATED', 1, 'created'), ('CREATED', 'PAYING', 2, 'pay'), ('PAYING', 'UNKNOWN', 3, 'charge timeout')) AS t(from_status, to_status, version, reason)`,
    [ORDER_PREFIX, orders],
  );
  await db.query('ANALYZE orders, reservations, order_transitions');
}

/** The provider's side: a charge for every order but each `unchargedEvery`-th (its notification held). */
export async function chargeAtProvider(
  channel: ChannelClient,
  orders: number,
  unchargedEvery: number,
): Promise<number> {
  const charged = Array.from({ length: orders }, (_, i) => i + 1).filter((i) => isCharged(i, unchargedEvery));
  let next = 0;
  const worker = async () => {
    while (next < charged.length) {
      const i = charged[next++] as number;
      const reply = await channel.charge(orderIdOf(i), PRICE_MINOR, 'http://127.0.0.1:1/held');
      if (reply.kind !== 'CHARGED') throw new Error(`seeding the provider: ${orderIdOf(i)} ${JSON.stringify(reply)}`);
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
  return charged.length;
}

export interface RecoveryCheck {
  orders: number;
  byStatus: Record<string, number>;
  /** Charged at the provider but not PAID, or never charged but not FAILED. */
  wrongOutcome: number;
  /** total = available + held + confirmed, confirmed = PAID, available = FAILED, nothing held. */
  countersConserved: boolean;
  /** Orders without exactly one outbox event, or with an event not naming their terminal status. */
  eventsNotOne: number;
  reconciliationMismatches: number;
  firstMismatch?: string;
  ok: boolean;
}

export async function checkRecovery(
  db: Db,
  channel: ChannelClient,
  orders: number,
  unchargedEvery: number,
): Promise<RecoveryCheck> {
  const statuses = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM orders WHERE tenant_id = $1 GROUP BY status ORDER BY status',
    [RECOVERY_TENANT],
  );
  const byStatus = Object.fromEntries(statuses.rows.map((r) => [r.status, r.n]));
  const wrong = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM orders
     WHERE tenant_id = $1 AND status <> CASE WHEN substr(order_id, $2)::int % $3 = 0 THEN 'FAILED' ELSE 'PAID' END`,
    [RECOVERY_TENANT, ORDER_PREFIX.length + 1, unchargedEvery],
  );
  const sku = await db.query<{ conserved: boolean }>(
    `SELECT s.total = s.available + s.held + s.confirmed AND s.held = 0
            AND s.confirmed = (SELECT count(*) FROM orders WHERE tenant_id = $1 AND status = 'PAID')
            AND s.available = (SELECT count(*) FROM orders WHERE tenant_id = $1 AND status = 'FAILED') AS conserved
     FROM sku_counters s WHERE s.tenant_id = $1 AND s.sku = $2`,
    [RECOVERY_TENANT, SKU],
  );
  const events = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM orders o
     WHERE o.tenant_id = $1 AND (SELECT count(*) FROM outbox e WHERE e.order_id = o.order_id) <> 1
        OR o.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.event_type = 'ORDER_' || o.status)`,
    [RECOVERY_TENANT],
  );
  const report = await reconcile(db, channel, RECOVERY_TENANT);
  const first = report.mismatches[0];
  const check = {
    orders,
    byStatus,
    wrongOutcome: wrong.rows[0]?.n ?? orders,
    countersConserved: sku.rows[0]?.conserved ?? false,
    eventsNotOne: events.rows[0]?.n ?? orders,
    reconciliationMismatches: report.mismatches.length,
    ...(first ? { firstMismatch: `${first.order_id} ${first.class}: ${first.detail}` } : {}),
  };
  const converged = (byStatus.PAID ?? 0) + (byStatus.FAILED ?? 0) === orders;
  const ok =
    converged &&
    check.wrongOutcome === 0 &&
    check.countersConserved &&
    check.eventsNotOne === 0 &&
    check.reconciliationMismatches === 0;
  return { ...check, ok };
}

/**
 * Whether a seeded order is still unfinished (CREATED, PAYING, UNKNOWN or REFUNDING: the partial
 * index `orders_unfinished`). The bench polls this every 50 ms while recovery runs, so it must cost
 * next to nothing: a count of the tenant's orders (NOT IN PAID, FAILED) read each of its orders, 7.7
 * ms a probe on a loaded run, CPU that the recovery and the provider it measures share. This
 * reads the unfinished orders only, and stops at the first of the tenant's. Without
 * `enable_seqscan = off` PostgreSQL planned the EXISTS as a scan of every order (70,400 rows read
 * per probe in a full run, where the other runs' orders are in the table). An order that ended
 * anywhere but PAID or FAILED is not waited for; the check afterwards counts it as a wrong outcome.
 */
export async function anyUnconverged(db: Db): Promise<boolean> {
  const result = await inTx(db, async (tx) => {
    await tx.query('SET LOCAL enable_seqscan = off');
    return tx.query<{ any: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM orders WHERE status IN ('CREATED', 'PAYING', 'UNKNOWN', 'REFUNDING')
                      AND tenant_id = $1) AS any`,
      [RECOVERY_TENANT],
    );
  });
  return result.rows[0]?.any ?? false;
}

/** When each seeded order reached its terminal state (ms since epoch), for the per-order latencies. */
export async function convergedAt(db: Db): Promise<number[]> {
  const result = await db.query<{ at: Date }>(
    `SELECT t.at FROM order_transitions t JOIN orders o USING (order_id)
     WHERE o.tenant_id = $1 AND t.to_status IN ('PAID', 'FAILED')`,
    [RECOVERY_TENANT],
  );
  return result.rows.map((r) => r.at.getTime());
}
