import type { Executor } from '../platform/db.ts';

// Issue 48, the units' rules of reconciliation: where a SKU's sold units are once they have
// shipped. The per-order rules judge an order against its reservation; these judge a SKU against
// the orders that shipped its units, so a refund that put shipped units back on sale — and the
// same unit then sold and shipped again — is named, not only "conserved".
//
// A unit has shipped when its order's fulfilment is FULFILLED; it is back in stock only after an
// operator's audited return (order_operator_actions `return`). So per SKU:
// - SHIPPED_UNITS_EXCEED_TOTAL: the units shipped and not returned are more than the SKU ever had
//   (one unit shipped twice: alice's refunded unit put back on sale and shipped to bob);
// - REFUNDED_SHIPPED_NE_ORDERS: the REFUNDED_SHIPPED reservations' units differ from the units of
//   the orders refunded (REFUNDING, REFUNDED) after they shipped and not returned: a refund that put
//   shipped units back on sale, or a unit kept out for an order that never shipped or was returned.
// With CONFIRMED_NE_PAID (confirmed units = PAID orders) this says: units confirmed or refunded
// after shipping = units of PAID orders + units of orders refunded after shipping.

export const UNIT_CLASSES = ['SHIPPED_UNITS_EXCEED_TOTAL', 'REFUNDED_SHIPPED_NE_ORDERS'] as const;
export type UnitClass = (typeof UNIT_CLASSES)[number];

export interface UnitDisagreement {
  tenant_id: string;
  sku: string;
  class: UnitClass;
  detail: string;
}

interface SkuUnits {
  tenant_id: string;
  sku: string;
  total: number;
  shipped: number;
  refunded_shipped_orders: number;
  refunded_shipped_rows: number;
}

/** Every SKU whose shipped units break a rule above; `tenantId` undefined is every tenant. */
export async function listUnitDisagreements(db: Executor, tenantId?: string): Promise<UnitDisagreement[]> {
  // An order's lines: its order_lines rows, or (a one-line order has none) the order row itself.
  // Shipped orders and REFUNDED_SHIPPED rows are summed per SKU once each, then joined to the SKUs.
  const result = await db.query<SkuUnits>(
    `WITH shipped AS MATERIALIZED (
       SELECT o.tenant_id, coalesce(l.sku, o.sku) AS sku, sum(coalesce(l.quantity, o.quantity)) AS units,
              sum(coalesce(l.quantity, o.quantity)) FILTER (WHERE o.status IN ('REFUNDING', 'REFUNDED')) AS refunded
       FROM orders o LEFT JOIN order_lines l ON l.order_id = o.order_id
       WHERE o.fulfilment_status = 'FULFILLED' AND ($1::text IS NULL OR o.tenant_id = $1)
         AND NOT EXISTS (SELECT 1 FROM order_operator_actions a WHERE a.order_id = o.order_id AND a.action = 'return')
       GROUP BY 1, 2),
     kept AS MATERIALIZED (
       SELECT tenant_id, sku, sum(quantity) AS units FROM reservations
       WHERE status = 'REFUNDED_SHIPPED' AND ($1::text IS NULL OR tenant_id = $1)
       GROUP BY 1, 2)
     SELECT s.tenant_id, s.sku, s.total,
            coalesce(p.units, 0)::int AS shipped,
            coalesce(p.refunded, 0)::int AS refunded_shipped_orders,
            coalesce(k.units, 0)::int AS refunded_shipped_rows
     FROM skus s
     LEFT JOIN shipped p ON p.tenant_id = s.tenant_id AND p.sku = s.sku
     LEFT JOIN kept k ON k.tenant_id = s.tenant_id AND k.sku = s.sku
     WHERE ($1::text IS NULL OR s.tenant_id = $1)
       AND (coalesce(p.units, 0) > s.total OR coalesce(p.refunded, 0) <> coalesce(k.units, 0))
     ORDER BY 1, 2`,
    [tenantId ?? null],
  );
  const out: UnitDisagreement[] = [];
  for (const r of result.rows) {
    const where = { tenant_id: r.tenant_id, sku: r.sku };
    if (r.shipped > r.total)
      out.push({
        ...where,
        class: 'SHIPPED_UNITS_EXCEED_TOTAL',
        detail: `${r.tenant_id}/${r.sku}: shipped and not returned=${r.shipped} > total=${r.total}`,
      });
    if (r.refunded_shipped_orders !== r.refunded_shipped_rows)
      out.push({
        ...where,
        class: 'REFUNDED_SHIPPED_NE_ORDERS',
        detail: `${r.tenant_id}/${r.sku}: refunded_shipped=${r.refunded_shipped_rows}, units of orders refunded after shipping and not returned=${r.refunded_shipped_orders}`,
      });
  }
  return out;
}
