import type { Executor } from '../../platform/db.ts';

// The storefront lists at most this many SKUs of a tenant (a flash sale has a handful).
export const CATALOGUE_LIMIT = 100;

export interface CatalogueEntry {
  sku: string;
  name: string;
  price: number;
  available: number;
}

/** What a buyer may see of the tenant's SKUs: name, price and units left — not held/confirmed. */
export async function listCatalogue(db: Executor, tenantId: string): Promise<CatalogueEntry[]> {
  const result = await db.query<{ sku: string; name: string; price: string; available: number }>(
    'SELECT sku, name, price, available FROM skus WHERE tenant_id = $1 ORDER BY sku LIMIT $2',
    [tenantId, CATALOGUE_LIMIT],
  );
  return result.rows.map((r) => ({ ...r, price: Number(r.price) }));
}
