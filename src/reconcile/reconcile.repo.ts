import type { Executor } from '../platform/db.ts';
import type { OrderStatus } from '../orders/index.ts';

export interface OrderRow {
  order_id: string;
  status: OrderStatus;
  amount: number;
  reservation: string | null;
}

/** Every order with the status of the reservation it points at now. */
// Every read takes `tenantId`: a tenant's admin reconciles its own tenant; undefined is every tenant.
export async function listOrdersWithReservation(db: Executor, tenantId?: string): Promise<OrderRow[]> {
  const result = await db.query<OrderRow>(
    `SELECT o.order_id, o.status, o.amount, r.status AS reservation
     FROM orders o LEFT JOIN reservations r ON r.tenant_id = o.tenant_id AND r.request_key = o.reservation_key
     WHERE ($1::text IS NULL OR o.tenant_id = $1)
     ORDER BY o.created_at`,
    [tenantId ?? null],
  );
  return result.rows;
}

/** SKUs whose counters disagree with each other or with their reservation rows. */
export async function listStockDrift(db: Executor, tenantId?: string): Promise<Array<{ tenant_id: string; sku: string; detail: string }>> {
  const result = await db.query<{ tenant_id: string; sku: string; total: number; available: number; held: number; confirmed: number; held_rows: number; confirmed_rows: number }>(
    `SELECT s.tenant_id, s.sku, s.total, s.available, s.held, s.confirmed,
            coalesce(sum(r.quantity) FILTER (WHERE r.status = 'HELD'), 0)::int AS held_rows,
            coalesce(sum(r.quantity) FILTER (WHERE r.status = 'CONFIRMED'), 0)::int AS confirmed_rows
     FROM skus s LEFT JOIN reservations r ON r.tenant_id = s.tenant_id AND r.sku = s.sku
     WHERE ($1::text IS NULL OR s.tenant_id = $1)
     GROUP BY s.tenant_id, s.sku
     HAVING s.total <> s.available + s.held + s.confirmed
         OR s.held <> coalesce(sum(r.quantity) FILTER (WHERE r.status = 'HELD'), 0)
         OR s.confirmed <> coalesce(sum(r.quantity) FILTER (WHERE r.status = 'CONFIRMED'), 0)`,
    [tenantId ?? null],
  );
  return result.rows.map((r) => ({
    tenant_id: r.tenant_id,
    sku: r.sku,
    detail: `total=${r.total} available=${r.available} held=${r.held} (rows ${r.held_rows}) confirmed=${r.confirmed} (rows ${r.confirmed_rows})`,
  }));
}

export async function countConfirmedReservations(db: Executor, tenantId?: string): Promise<number> {
  const result = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM reservations WHERE status = 'CONFIRMED' AND ($1::text IS NULL OR tenant_id = $1)`, [tenantId ?? null]);
  return result.rows[0]?.n ?? 0;
}
