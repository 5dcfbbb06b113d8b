import type { Db } from '../src/platform/db.ts';
import { BENCH_TENANT } from './servers.ts';

// Seeding and the zero-oversell check of the order runs, for flashpay's `skus` and the baseline's
// `bench_stock` alike. SKU names of one run share a prefix; the check looks at that prefix only.

export interface StockRow {
  sku: string;
  stock: number;
}

// Long enough that no hold expires during a run (no expiry worker runs in the bench anyway).
const HOLD_TTL_MS = 3_600_000;
const PRICE_MINOR = 1990;

/** Bulk insert of flashpay SKUs, columns as inventory.repo's tryInsertSku writes them. */
export async function seedSkus(db: Db, rows: readonly StockRow[], tenant = BENCH_TENANT): Promise<void> {
  await db.query(
    `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, per_user_limit, hold_ttl_ms, created_at)
     SELECT $1, s.sku, 'bench ' || s.sku, $2, s.stock, s.stock, 0, NULL, $3, now()
     FROM unnest($4::text[], $5::int[]) AS s(sku, stock)`,
    [tenant, PRICE_MINOR, HOLD_TTL_MS, rows.map((r) => r.sku), rows.map((r) => r.stock)],
  );
}

export async function seedBaselineStock(db: Db, rows: readonly StockRow[]): Promise<void> {
  await db.query(
    `INSERT INTO bench_stock (id, stock, available) SELECT s.id, s.stock, s.stock FROM unnest($1::text[], $2::int[]) AS s(id, stock)`,
    [rows.map((r) => r.sku), rows.map((r) => r.stock)],
  );
}

/** What the database says after a run. ok = nothing oversold and every counter adds up. */
export interface StockCheck {
  skus: number;
  stock: number;
  /** Units ordered (every bench order is one unit). */
  orders: number;
  /** SKUs with more units ordered than they ever had. */
  oversoldSkus: number;
  /** SKUs whose counters disagree: total ≠ available + held + confirmed, or held + confirmed ≠ units ordered. */
  counterMismatches: number;
  ok: boolean;
}

interface CheckRow {
  skus: number;
  stock: number;
  orders: number;
  oversold_skus: number;
  counter_mismatches: number;
}

function toCheck(row: CheckRow | undefined): StockCheck {
  if (!row) throw new Error('stock check returned no row');
  const check = {
    skus: row.skus,
    stock: row.stock,
    orders: row.orders,
    oversoldSkus: row.oversold_skus,
    counterMismatches: row.counter_mismatches,
  };
  return { ...check, ok: check.oversoldSkus === 0 && check.counterMismatches === 0 && check.orders <= check.stock };
}

export async function checkSkus(db: Db, prefix: string, tenant = BENCH_TENANT): Promise<StockCheck> {
  const result = await db.query<CheckRow>(
    `SELECT count(*)::int AS skus, coalesce(sum(s.total), 0)::int AS stock, coalesce(sum(o.units), 0)::int AS orders,
            count(*) FILTER (WHERE coalesce(o.units, 0) > s.total)::int AS oversold_skus,
            count(*) FILTER (WHERE s.total <> s.available + s.held + s.confirmed OR coalesce(o.units, 0) <> s.held + s.confirmed)::int AS counter_mismatches
     FROM sku_counters s
     LEFT JOIN (SELECT tenant_id, sku, sum(quantity) AS units FROM orders GROUP BY tenant_id, sku) o ON o.tenant_id = s.tenant_id AND o.sku = s.sku
     WHERE s.tenant_id = $1 AND starts_with(s.sku, $2)`,
    [tenant, prefix],
  );
  return toCheck(result.rows[0]);
}

/** total = available + held + confirmed over every SKU in the database, not only one run's. */
export async function countBrokenSkus(db: Db): Promise<number> {
  const result = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM sku_counters WHERE total <> available + held + confirmed',
  );
  return result.rows[0]?.n ?? 0;
}

export async function checkBaselineStock(db: Db, prefix: string): Promise<StockCheck> {
  const result = await db.query<CheckRow>(
    `SELECT count(*)::int AS skus, coalesce(sum(s.stock), 0)::int AS stock, coalesce(sum(o.n), 0)::int AS orders,
            count(*) FILTER (WHERE coalesce(o.n, 0) > s.stock)::int AS oversold_skus,
            count(*) FILTER (WHERE s.available <> s.stock - coalesce(o.n, 0) OR s.available < 0)::int AS counter_mismatches
     FROM bench_stock s LEFT JOIN (SELECT stock_id, count(*) AS n FROM bench_orders GROUP BY stock_id) o ON o.stock_id = s.id
     WHERE starts_with(s.id, $1)`,
    [prefix],
  );
  return toCheck(result.rows[0]);
}
