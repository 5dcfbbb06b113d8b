import type { Executor } from '../platform/db.ts';

/**
 * The stock service and the shop agree (seed 004): for every request the stock service applied and
 * whose every result was delivered, the order shows it — RESERVED → it left PENDING and was not
 * REJECTED; REJECTED → it is REJECTED; RELEASED → it left RELEASING. A result still in the stock
 * outbox is in flight, not a disagreement.
 */
export async function listStockDisagreements(
  db: Executor,
  tenantId?: string,
): Promise<Array<{ order_id: string; status: string; detail: string }>> {
  const result = await db.query<{ order_id: string; status: string; result_type: string }>(
    `SELECT o.order_id, o.status, i.result_type
     FROM stock_inbox i JOIN orders o ON o.order_id = i.order_id
     WHERE i.applied_at IS NOT NULL AND ($1::text IS NULL OR o.tenant_id = $1)
       AND NOT EXISTS (SELECT 1 FROM stock_outbox x WHERE x.request_key = i.request_key AND x.published_at IS NULL)
       AND ((i.result_type = 'STOCK_RESERVED' AND o.status IN ('PENDING', 'REJECTED'))
         OR (i.result_type = 'STOCK_REJECTED' AND o.status <> 'REJECTED')
         OR (i.result_type = 'STOCK_RELEASED' AND o.status = 'RELEASING'))
     ORDER BY o.order_id LIMIT 500`,
    [tenantId ?? null],
  );
  return result.rows.map((r) => ({
    order_id: r.order_id,
    status: r.status,
    detail: `stock service answered ${r.result_type}, the order is ${r.status}`,
  }));
}
