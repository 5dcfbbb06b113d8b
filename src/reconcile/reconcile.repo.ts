import type { Executor } from '../platform/db.ts';
import type { OrderStatus } from '../orders/index.ts';

export interface OrderRow {
  order_id: string;
  status: OrderStatus;
  amount: number;
  reservation: string | null;
  /** How many lines (reservations) the order has. */
  lines: number;
  fulfilment: string;
  saga_late: boolean;
  /** The provider the order's payment was recorded at (issue 48); null: never sent, wallet-paid, or before migration 180. */
  provider: string | null;
}

// One page of the order scan: a bounded result per statement, however large the table.
export const ORDER_PAGE_SIZE = 5_000;

/**
 * One keyset page of orders (`after`: the last order_id seen), each with the status of the
 * reservations its lines point at now (line 1's key is on the order row, lines 2..n on
 * order_lines), folded into one status as the rules judge it: all lines alike give that status; a
 * HELD line makes it HELD; otherwise a PAID order with any line not CONFIRMED is judged RELEASED,
 * any other order with a CONFIRMED line CONFIRMED; a missing row, none.
 * `ids` narrows the page to those orders (the incremental pass's changed set).
 * Every read takes `tenantId`: a tenant's admin reconciles its own tenant; undefined is every tenant.
 */
export async function listOrdersWithReservationPage(
  db: Executor,
  tenantId: string | undefined,
  after: string | null,
  limit = ORDER_PAGE_SIZE,
  ids?: string[],
): Promise<OrderRow[]> {
  // Each line's reservation is read by its key: the LATERAL's LIMIT 1 (the key is unique) keeps
  // PostgreSQL from flattening it into a join that, on young statistics, compared every order of a
  // tenant with every reservation of it (0.3–0.5 s a page after the bench's sale; docs/benchmarks/journal.md §13).
  const result = await db.query<OrderRow>(
    `SELECT o.order_id, o.status, o.amount,
            CASE WHEN bool_or(r.status IS NULL) THEN NULL
                 WHEN count(DISTINCT r.status) = 1 THEN min(r.status)
                 WHEN bool_or(r.status = 'HELD') THEN 'HELD'
                 WHEN o.status = 'PAID' THEN 'RELEASED'
                 ELSE 'CONFIRMED' END AS reservation,
            count(*)::int AS lines,
            o.fulfilment_status AS fulfilment,
            o.payment_provider AS provider,
            bool_or(coalesce(s.state IN ('FORWARD', 'COMPENSATING') AND s.deadline_at <= now(), false)) AS saga_late
     FROM orders o
     CROSS JOIN LATERAL (SELECT o.reservation_key AS key UNION ALL SELECT l.reservation_key FROM order_lines l WHERE l.order_id = o.order_id AND l.line_no > 1) k
     LEFT JOIN LATERAL (SELECT r.status FROM reservations r WHERE r.tenant_id = o.tenant_id AND r.request_key = k.key LIMIT 1) r ON true
     LEFT JOIN sagas s ON s.saga_id = o.order_id
     WHERE ($1::text IS NULL OR o.tenant_id = $1) AND ($2::text IS NULL OR o.order_id > $2)
       AND ($4::text[] IS NULL OR o.order_id = ANY($4))
     GROUP BY o.order_id
     ORDER BY o.order_id LIMIT $3`,
    [tenantId ?? null, after, limit, ids ?? null],
  );
  return result.rows;
}

/**
 * Writes to the tables reconciliation reads, as counted by PostgreSQL's statistics (no scan, no
 * index): when this has not moved and the provider is not asked, nothing can have changed.
 */
export async function changeCounter(db: Executor): Promise<number> {
  const result = await db.query<{ n: number | null }>(
    `SELECT sum(n_tup_ins + n_tup_upd + n_tup_del)::bigint AS n FROM pg_stat_user_tables
     WHERE relname IN ('orders', 'reservations', 'skus', 'outbox', 'fulfillment') AND schemaname = current_schema()`,
  );
  return result.rows[0]?.n ?? 0;
}

/**
 * SKUs whose counters disagree with each other or with their reservation rows. Read from the view
 * sku_counters (migration 110): the SKU row counts units out, confirmed is derived from the
 * CONFIRMED rows (refunded_shipped from the REFUNDED_SHIPPED rows, issue 48), so a drift shows as
 * held != the HELD rows.
 */
export async function listStockDrift(
  db: Executor,
  tenantId?: string,
): Promise<Array<{ tenant_id: string; sku: string; detail: string }>> {
  const result = await db.query<{
    tenant_id: string;
    sku: string;
    total: number;
    available: number;
    held: number;
    confirmed: number;
    refunded_shipped: number;
    held_rows: number;
    confirmed_rows: number;
  }>(
    // The reservations are summed per SKU once, then joined: as a join then a GROUP BY, a plan made
    // on young statistics compared every SKU with every reservation of its tenant (4.7 s after the
    // bench's sale; docs/benchmarks/journal.md §13).
    `WITH r AS MATERIALIZED (
       SELECT tenant_id, sku,
              sum(quantity) FILTER (WHERE status = 'HELD') AS held_rows,
              sum(quantity) FILTER (WHERE status = 'CONFIRMED') AS confirmed_rows
       FROM reservations WHERE status IN ('HELD', 'CONFIRMED') AND ($1::text IS NULL OR tenant_id = $1)
       GROUP BY tenant_id, sku)
     SELECT s.tenant_id, s.sku, s.total, s.available, s.held, s.confirmed, s.refunded_shipped,
            coalesce(r.held_rows, 0)::int AS held_rows, coalesce(r.confirmed_rows, 0)::int AS confirmed_rows
     FROM sku_counters s LEFT JOIN r ON r.tenant_id = s.tenant_id AND r.sku = s.sku
     WHERE ($1::text IS NULL OR s.tenant_id = $1)
       AND (s.total <> s.available + s.held + s.confirmed + s.refunded_shipped
         OR s.held <> coalesce(r.held_rows, 0) OR s.confirmed <> coalesce(r.confirmed_rows, 0))`,
    [tenantId ?? null],
  );
  return result.rows.map((r) => ({
    tenant_id: r.tenant_id,
    sku: r.sku,
    detail: `total=${r.total} available=${r.available} held=${r.held} (rows ${r.held_rows}) confirmed=${r.confirmed} (rows ${r.confirmed_rows}) refunded_shipped=${r.refunded_shipped}`,
  }));
}

export async function countConfirmedReservations(db: Executor, tenantId?: string): Promise<number> {
  const result = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM reservations WHERE status = 'CONFIRMED' AND ($1::text IS NULL OR tenant_id = $1)`,
    [tenantId ?? null],
  );
  return result.rows[0]?.n ?? 0;
}
