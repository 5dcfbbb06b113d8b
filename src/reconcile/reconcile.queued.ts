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

export interface SplitDisagreement {
  tenant_id: string;
  key: string;
  detail: string;
}

/**
 * Split databases (FLASHPAY_STOCK_SERVICE=separate): the shop's mirror of every queued hold and
 * the stock service's reservation under the same key agree once the queue is quiet. A mirror
 * hold whose move is still on its way (not yet asked, or asked and not yet applied) is in flight,
 * not a disagreement; a reservation the stock service holds that no shop mirrors is one unless its
 * RESERVED result is still on its way.
 */
export async function listSplitDisagreements(shopDb: Executor, stockDb: Executor): Promise<SplitDisagreement[]> {
  const mirror = await shopDb.query<{ tenant_id: string; key: string; status: string; synced: string }>(
    `SELECT m.tenant_id, m.request_key AS key, r.status, m.synced_status AS synced
     FROM stock_mirror_holds m JOIN reservations r ON r.tenant_id = m.tenant_id AND r.request_key = m.request_key`,
  );
  const pendingShop = await shopDb.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM stock_requests_out WHERE published_at IS NULL AND dead_at IS NULL',
  );
  const stock = await stockDb.query<{ tenant_id: string; key: string; status: string }>(
    'SELECT tenant_id, request_key AS key, status FROM reservations',
  );
  const inFlight = await stockDb.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM stock_inbox WHERE applied_at IS NULL AND parked_at IS NULL)
          + (SELECT count(*) FROM stock_outbox WHERE published_at IS NULL AND dead_at IS NULL) AS n`,
  );
  const quiet = Number(pendingShop.rows[0]?.n) === 0 && Number(inFlight.rows[0]?.n) === 0;
  const held = new Map(stock.rows.map((r) => [`${r.tenant_id}\u0000${r.key}`, r.status]));
  const out: SplitDisagreement[] = [];
  for (const m of mirror.rows) {
    const id = `${m.tenant_id}\u0000${m.key}`;
    const theirs = held.get(id);
    held.delete(id);
    if (m.status === theirs) continue;
    if (!quiet || m.status !== m.synced) continue; // a move on its way
    out.push({
      tenant_id: m.tenant_id,
      key: m.key,
      detail: `shop mirror ${m.status}, stock service ${theirs ?? 'none'}`,
    });
  }
  if (quiet)
    for (const [id, status] of held) {
      const [tenant, key] = id.split('\u0000') as [string, string];
      // A RELEASED reservation nobody mirrors is a RESERVED answer for an order that had already moved: it holds nothing.
      if (status !== 'RELEASED')
        out.push({ tenant_id: tenant, key, detail: `stock service ${status}, no mirror in the shop` });
    }
  return out;
}
