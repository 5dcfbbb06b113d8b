import type { Executor } from '../../platform/db.ts';
import type { Sku, SkuTerms } from '../stock.types.ts';

// A SKU's row: its terms (what an order snapshots) and, for readers of the counters, the view
// sku_counters (migration 110: the row counts units out; confirmed is derived from the reservations).

interface SkuTermsRow {
  tenant_id: string;
  sku: string;
  name: string;
  price: number;
  total: number;
  available: number;
  per_user_limit: number | null;
  hold_ttl_ms: number;
}

interface SkuRow extends SkuTermsRow {
  held: number;
  confirmed: number;
  released: number;
  refunded_shipped: number;
}

function toTerms(row: SkuTermsRow): SkuTerms {
  return {
    tenantId: row.tenant_id,
    sku: row.sku,
    name: row.name,
    price: row.price,
    total: row.total,
    available: row.available,
    perUserLimit: row.per_user_limit,
    holdTtlMs: row.hold_ttl_ms,
  };
}

export interface NewSku {
  tenantId: string;
  sku: string;
  name: string;
  price: number;
  stock: number;
  perUserLimit: number | null;
  holdTtlMs: number;
}

/** Inserts a SKU; false when it already exists in the tenant. */
export async function tryInsertSku(db: Executor, sku: NewSku, now: Date): Promise<boolean> {
  const result = await db.query(
    `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, per_user_limit, hold_ttl_ms, created_at)
     VALUES ($1, $2, $3, $4, $5, $5, 0, $6, $7, $8) ON CONFLICT DO NOTHING`,
    [sku.tenantId, sku.sku, sku.name, sku.price, sku.stock, sku.perUserLimit, sku.holdTtlMs, now],
  );
  return result.rowCount === 1;
}

export interface SkuChange {
  price?: number;
  name?: string;
  /** New units put on sale: total and available grow together, so the counters' CHECK holds. */
  addStock?: number;
}

/**
 * Changes a SKU's price, name or stock in one statement; false when there is no such SKU or the
 * stock added would take its total past `maxTotal` (summed as bigint: the integer column itself
 * must never be asked to overflow). Orders keep their snapshot.
 */
export async function tryUpdateSku(
  db: Executor,
  tenantId: string,
  sku: string,
  change: SkuChange,
  maxTotal: number,
): Promise<boolean> {
  const result = await db.query(
    `UPDATE skus SET price = coalesce($3, price), name = coalesce($4, name), total = total + $5, available = available + $5
     WHERE tenant_id = $1 AND sku = $2 AND ($5 = 0 OR total::bigint + $5 <= $6)`,
    [tenantId, sku, change.price ?? null, change.name ?? null, change.addStock ?? 0, maxTotal],
  );
  return result.rowCount === 1;
}

/** A SKU's terms from its row alone: what the create path reads (a plain read, no lock, no sums). */
export async function findSkuTerms(db: Executor, tenantId: string, sku: string): Promise<SkuTerms | undefined> {
  const result = await db.query<SkuTermsRow>({
    name: 'sku-find-terms',
    text: `SELECT tenant_id, sku, name, price, total, available, per_user_limit, hold_ttl_ms
           FROM skus WHERE tenant_id = $1 AND sku = $2`,
    values: [tenantId, sku],
  });
  return result.rows[0] ? toTerms(result.rows[0]) : undefined;
}

/**
 * A SKU with its counters, read in one snapshot from the view sku_counters: held and confirmed
 * are derived there from the CONFIRMED reservations (migration 110), refunded_shipped from the
 * REFUNDED_SHIPPED ones (migration 182), so total = available + held + confirmed + refunded_shipped
 * in every answer although a pay moves no counter on the SKU row.
 */
export async function findSku(db: Executor, tenantId: string, sku: string): Promise<Sku | undefined> {
  const result = await db.query<SkuRow>({
    name: 'sku-find',
    text: `SELECT s.tenant_id, s.sku, s.name, s.price, c.total, c.available, c.held, c.confirmed, c.released,
                  c.refunded_shipped, s.per_user_limit, s.hold_ttl_ms
           FROM skus s JOIN sku_counters c ON c.tenant_id = s.tenant_id AND c.sku = s.sku
           WHERE s.tenant_id = $1 AND s.sku = $2`,
    values: [tenantId, sku],
  });
  const row = result.rows[0];
  return row
    ? {
        ...toTerms(row),
        held: row.held,
        confirmed: row.confirmed,
        released: row.released,
        refundedShipped: row.refunded_shipped,
      }
    : undefined;
}

/** A page of SKUs in (tenant, sku) order (issue 52: the console's SKU list). */
export interface SkuPage {
  skus: Array<Sku & { released: number; refundedShipped: number }>;
  /** The last row's position when there may be more. */
  next: { tenantId: string; sku: string } | null;
}

/**
 * The SKUs of a tenant (every tenant: undefined) after `after`, with their counters from
 * sku_counters in one snapshot; keyset on the primary key (tenant_id, sku), so a page costs its
 * size whatever the catalogue.
 */
export async function listSkus(
  db: Executor,
  tenantId: string | undefined,
  after: { tenantId: string; sku: string } | undefined,
  limit: number,
): Promise<SkuPage> {
  const result = await db.query<SkuRow>(
    `SELECT s.tenant_id, s.sku, s.name, s.price, c.total, c.available, c.held, c.confirmed, c.released,
            c.refunded_shipped, s.per_user_limit, s.hold_ttl_ms
     FROM skus s JOIN sku_counters c ON c.tenant_id = s.tenant_id AND c.sku = s.sku
     WHERE ($1::text IS NULL OR s.tenant_id = $1)
       AND ($2::text IS NULL OR (s.tenant_id, s.sku) > ($2, $3::text))
     ORDER BY s.tenant_id, s.sku LIMIT $4`,
    [tenantId ?? null, after?.tenantId ?? null, after?.sku ?? null, limit + 1],
  );
  const rows = result.rows.slice(0, limit);
  const last = rows[rows.length - 1];
  return {
    skus: rows.map((row) => ({
      ...toTerms(row),
      held: row.held,
      confirmed: row.confirmed,
      released: row.released,
      refundedShipped: row.refunded_shipped,
    })),
    next: result.rows.length > limit && last ? { tenantId: last.tenant_id, sku: last.sku } : null,
  };
}
