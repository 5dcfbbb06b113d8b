import type { Tx } from '../../platform/db.ts';

// SKU definitions with split databases: admin writes go to the stock service (its own port); the
// shops need a SKU's name, price and limit to create an order, so the stock service publishes each
// changed definition through its result outbox (SKU_DEFINED) and the shops keep a replica. The
// change is found by comparing skus with what was last published, so every write path (routes,
// CLI, tests) is covered without a hook.

export const SKU_DEFINED = 'SKU_DEFINED';

export interface SkuDefinition {
  tenant_id: string;
  sku: string;
  name: string;
  price: number;
  total: number;
  per_user_limit: number | null;
  hold_ttl_ms: number;
  version: number;
}

/**
 * Stock side, inside the applier's transaction (its advisory lock makes it single): every SKU
 * whose definition differs from the last published one goes to the result outbox, with a version
 * one higher. Returns how many were published.
 */
export async function publishSkuChanges(tx: Tx, now: Date): Promise<number> {
  const changed = await tx.query<SkuDefinition>(
    `INSERT INTO stock_skus_sent AS p (tenant_id, sku, name, price, total, per_user_limit, hold_ttl_ms, version)
     SELECT s.tenant_id, s.sku, s.name, s.price, s.total, s.per_user_limit, s.hold_ttl_ms, 1
     FROM skus s LEFT JOIN stock_skus_sent q ON q.tenant_id = s.tenant_id AND q.sku = s.sku
     WHERE q.sku IS NULL OR (s.name, s.price, s.total, s.per_user_limit, s.hold_ttl_ms)
                            IS DISTINCT FROM (q.name, q.price, q.total, q.per_user_limit, q.hold_ttl_ms)
     ON CONFLICT (tenant_id, sku) DO UPDATE SET name = EXCLUDED.name, price = EXCLUDED.price, total = EXCLUDED.total,
       per_user_limit = EXCLUDED.per_user_limit, hold_ttl_ms = EXCLUDED.hold_ttl_ms, version = p.version + 1
     RETURNING p.tenant_id, p.sku, p.name, p.price::float8 AS price, p.total, p.per_user_limit, p.hold_ttl_ms, p.version::float8 AS version`,
  );
  for (const d of changed.rows)
    await tx.query(
      `INSERT INTO stock_outbox (request_key, order_id, event_type, payload, created_at) VALUES ($1, '-', $2, $3, $4)`,
      [`sku/${d.tenant_id}/${d.sku}/v${d.version}`, SKU_DEFINED, d, now],
    );
  return changed.rows.length;
}

/**
 * Shop side: the replica takes a definition newer than the one it has. Stock added on the stock
 * service grows the replica's total and available alike, so its counters stay conserved.
 */
export async function applySkuDefinition(tx: Tx, d: SkuDefinition, now: Date): Promise<boolean> {
  const result = await tx.query(
    `INSERT INTO skus AS s (tenant_id, sku, name, price, total, available, held, per_user_limit, hold_ttl_ms, created_at, replica_version)
     VALUES ($1, $2, $3, $4, $5, $5, 0, $6, $7, $8, $9)
     ON CONFLICT (tenant_id, sku) DO UPDATE SET name = EXCLUDED.name, price = EXCLUDED.price,
       per_user_limit = EXCLUDED.per_user_limit, hold_ttl_ms = EXCLUDED.hold_ttl_ms,
       available = s.available + (EXCLUDED.total - s.total), total = EXCLUDED.total, replica_version = EXCLUDED.replica_version
     WHERE s.replica_version IS NULL OR s.replica_version < EXCLUDED.replica_version`,
    [d.tenant_id, d.sku, d.name, d.price, d.total, d.per_user_limit, d.hold_ttl_ms, now, d.version],
  );
  return result.rowCount === 1;
}
