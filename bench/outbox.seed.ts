import type { Db } from '../src/platform/db.ts';
import { BENCH_TENANT } from './servers.ts';

// The outbox runs' data: `events` PAID orders, each with its ORDER_PAID outbox row, written with
// set-based SQL as orders.transition would have left them (CONFIRMED reservation, version 3 =
// CREATED → PAYING → PAID). Every run starts from the same unpublished outbox (`resetOutbox`).

const SKU = 'outbox/sku';
const ORDER_PREFIX = 'bench-evt-';
const PRICE_MINOR = 1990;
const PAID_VERSION = 3;

export async function seedPaidOrders(db: Db, events: number): Promise<void> {
  await db.query(
    `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, hold_ttl_ms, created_at)
     VALUES ($1, $2, 'bench outbox SKU', $3, $4, 0, $4, 3600000, now())`,
    [BENCH_TENANT, SKU, PRICE_MINOR, events],
  );
  await db.query(
    `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
     SELECT $1, $3 || i || '/r1', 'buyer-' || (i % 1000), $2, 1, 'CONFIRMED', now(), now(), now() FROM generate_series(1, $4::int) AS i`,
    [BENCH_TENANT, SKU, ORDER_PREFIX, events],
  );
  await db.query(
    `INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
     SELECT $3 || i, $1, 'buyer-' || (i % 1000), $2, 1, $5, 'PAID', $6, $3 || i || '/r1', now(), now() FROM generate_series(1, $4::int) AS i`,
    [BENCH_TENANT, SKU, ORDER_PREFIX, events, PRICE_MINOR, PAID_VERSION],
  );
  await db.query(
    `INSERT INTO outbox (order_id, event_type, order_version, payload, created_at, next_attempt_at)
     SELECT order_id, 'ORDER_PAID', version,
            jsonb_build_object('order_id', order_id, 'tenant_id', tenant_id, 'user_id', user_id, 'sku', sku,
                               'quantity', quantity, 'amount', amount, 'status', 'PAID', 'version', version),
            now(), now()
     FROM orders WHERE starts_with(order_id, $1) ORDER BY order_id`,
    [ORDER_PREFIX],
  );
}

/** Every event unpublished and due again; the consumer forgets everything it applied. */
export async function resetOutbox(db: Db): Promise<void> {
  await db.query(
    `UPDATE outbox SET published_at = NULL, claimed_by = NULL, claimed_until = NULL, attempts = 0,
       next_attempt_at = now() - interval '1 second', last_error = NULL, dead_at = NULL
     WHERE starts_with(order_id, $1)`,
    [ORDER_PREFIX],
  );
  await db.query('TRUNCATE ful_inbox, fulfillment, ful_received');
  // The reset rewrote every row: without this, later runs would scan ever more dead tuples.
  await db.query('VACUUM ANALYZE outbox');
}

/** What the outbox and the consumer say after a run. */
export interface DeliveryCheck {
  events: number;
  published: number;
  pending: number;
  dead: number;
  /** Events that needed more than one delivery attempt. */
  retried: number;
  /** Events published per relay (claimed_by), largest first: how the relays shared the work. */
  perRelay: number[];
  /** Consumer arrivals by effect: APPLIED once per event; DUPLICATE would mean a redelivery (absorbed). */
  arrivals: Record<string, number>;
  shippedOrders: number;
  /** Orders whose ship_count is not exactly 1. */
  shipCountNotOne: number;
  ok: boolean;
}

export async function checkDelivery(db: Db, events: number, withConsumer: boolean): Promise<DeliveryCheck> {
  const outbox = await db.query<{ published: number; pending: number; dead: number; retried: number }>(
    `SELECT count(*) FILTER (WHERE published_at IS NOT NULL)::int AS published, count(*) FILTER (WHERE published_at IS NULL)::int AS pending,
            count(*) FILTER (WHERE dead_at IS NOT NULL)::int AS dead, count(*) FILTER (WHERE attempts > 0)::int AS retried
     FROM outbox WHERE starts_with(order_id, $1)`,
    [ORDER_PREFIX],
  );
  const relays = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outbox WHERE starts_with(order_id, $1) AND published_at IS NOT NULL GROUP BY claimed_by ORDER BY n DESC`,
    [ORDER_PREFIX],
  );
  const effects = await db.query<{ effect: string; n: number }>(
    'SELECT effect, count(*)::int AS n FROM ful_received GROUP BY effect ORDER BY effect',
  );
  const ships = await db.query<{ shipped: number; not_one: number }>(
    'SELECT count(*)::int AS shipped, count(*) FILTER (WHERE ship_count <> 1)::int AS not_one FROM fulfillment',
  );
  const o = outbox.rows[0] ?? { published: 0, pending: 0, dead: 0, retried: 0 };
  const arrivals = Object.fromEntries(effects.rows.map((row) => [row.effect, row.n]));
  const shipped = ships.rows[0] ?? { shipped: 0, not_one: 0 };
  const published = o.published === events && o.pending === 0 && o.dead === 0;
  const appliedOnce =
    !withConsumer || (arrivals.APPLIED === events && shipped.shipped === events && shipped.not_one === 0);
  return {
    events,
    ...o,
    perRelay: relays.rows.map((row) => row.n),
    arrivals,
    shippedOrders: shipped.shipped,
    shipCountNotOne: shipped.not_one,
    ok: published && appliedOnce,
  };
}

/** Events the consumer has applied so far (for waiting on a broker consumer to catch up). */
export async function countApplied(db: Db): Promise<number> {
  const result = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ful_received WHERE effect = 'APPLIED'`);
  return result.rows[0]?.n ?? 0;
}
