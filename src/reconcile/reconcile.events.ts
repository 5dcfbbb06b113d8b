import type { Executor } from '../platform/db.ts';
import { EVENT_STATUSES } from '../orders/index.ts';

// The terminal statuses besides PAID (counted on its own), from the state machine; constants from
// code spelled into the SQL.
const OTHER_TERMINAL_SQL = [...EVENT_STATUSES]
  .filter((s) => s !== 'PAID')
  .map((s) => `'${s}'`)
  .join(', ');
const TERMINAL_SQL = [...EVENT_STATUSES].map((s) => `'${s}'`).join(', ');

export interface EventIntegrity {
  /** PAID orders with no ORDER_PAID outbox row: an event lost by a dual write (C29-19). */
  paid_without_event: number;
  paid_without_event_ids: string[];
  /** PAID, FAILED, CANCELLED or REFUNDED orders with no ORDER_<status> outbox row. */
  terminal_without_event: number;
  /** FAILED, CANCELLED or REFUNDED orders without their event (PAID ones are listed above). */
  terminal_without_event_ids: Array<{ order_id: string; status: string }>;
  /** Outbox events not yet published (including ones waiting behind an earlier version). */
  pending: number;
  /** Parked events: need an operator (listDeadEvents / redriveDead). */
  dead: number;
  /** Orders the fulfillment consumer shipped more than once (C29-18). */
  duplicate_shipments: number;
  /** Shipped orders that never were PAID (a forged or misrouted event), or that we do not have. */
  shipped_without_paid: number;
  shipped_without_paid_ids: Array<{ order_id: string; status: string | null }>;
  /** Orders whose event or shipment names other lines than the order holds (at most 100 listed). */
  lines_disagree: number;
  lines_disagree_ids: Array<{ order_id: string; status: string }>;
}

// Lines as a canonical JSON array of {sku, quantity} in SKU order: the order's own (its line rows,
// or the one line of an order placed before they existed), and what an event or a shipment names.
const ORDER_LINES_SQL = `COALESCE(
  (SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
     FROM order_lines l WHERE l.order_id = o.order_id),
  jsonb_build_array(jsonb_build_object('sku', o.sku, 'quantity', o.quantity)))`;
const namedLinesSql = (
  lines: string,
) => `(SELECT jsonb_agg(jsonb_build_object('sku', x->>'sku', 'quantity', (x->>'quantity')::int) ORDER BY x->>'sku')
     FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${lines}) = 'array' THEN ${lines} ELSE '[]'::jsonb END) x)`;

/**
 * Every event of an order and its shipment must name every line the order holds (issue 38: events
 * named the order row's first line only). Events written before lines travelled carry none and
 * are not judged.
 */
async function linesDisagreeing(db: Executor, tenantId: string | null) {
  const result = await db.query<{ order_id: string; status: string }>(
    `SELECT o.order_id, o.status FROM orders o CROSS JOIN LATERAL (SELECT ${ORDER_LINES_SQL} AS lines) mine
     WHERE o.status IN (${TERMINAL_SQL}) AND ($2::text IS NULL OR o.tenant_id = $2)
       AND (EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.payload ? 'lines'
                      AND ${namedLinesSql("e.payload->'lines'")} IS DISTINCT FROM mine.lines)
            OR EXISTS (SELECT 1 FROM fulfillment f WHERE f.order_id = o.order_id AND f.shipped_lines IS NOT NULL
                      AND ${namedLinesSql('f.shipped_lines')} IS DISTINCT FROM mine.lines))
     ORDER BY o.order_id LIMIT $1`,
    [MAX_IDS_LISTED, tenantId],
  );
  return result.rows;
}

// Ids are for a human to look at; the counts stay exact.
const MAX_IDS_LISTED = 100;

/**
 * Checks that three-way reconciliation cannot: the channel, orders and reservations can agree
 * while the consumer never hears of a payment (seed 000 C29-19). Cheap enough to run with every
 * reconciliation: each count is a scan of a partial index or an anti-join on outbox's (order_id, …) key.
 */
export async function checkEventIntegrity(db: Executor, tenantId?: string): Promise<EventIntegrity> {
  // A tenant narrows every count to its orders (and to the events and shipments of its orders).
  const t = tenantId ?? null;
  const missing = await db.query<{ order_id: string }>(
    `SELECT o.order_id FROM orders o
     WHERE o.status = 'PAID' AND ($2::text IS NULL OR o.tenant_id = $2)
       AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.event_type = 'ORDER_PAID')
     ORDER BY o.order_id LIMIT $1`,
    [MAX_IDS_LISTED, t],
  );
  const terminal = await db.query<{ order_id: string; status: string }>(
    `SELECT o.order_id, o.status FROM orders o
     WHERE o.status IN (${OTHER_TERMINAL_SQL}) AND ($2::text IS NULL OR o.tenant_id = $2)
       AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.event_type = 'ORDER_' || o.status)
     ORDER BY o.order_id LIMIT $1`,
    [MAX_IDS_LISTED, t],
  );
  // "Never PAID" is read from the timeline: an order refunded after it shipped was PAID once.
  const unpaidShipments = await db.query<{ order_id: string; status: string | null }>(
    `SELECT f.order_id, o.status FROM fulfillment f LEFT JOIN orders o ON o.order_id = f.order_id
     WHERE f.ship_count > 0 AND ($1::text IS NULL OR o.tenant_id = $1)
       AND NOT EXISTS (SELECT 1 FROM order_transitions t WHERE t.order_id = f.order_id AND t.to_status = 'PAID')
     ORDER BY f.order_id`,
    [t],
  );
  const counts = await db.query<{
    paid_without_event: number;
    terminal_without_event: number;
    pending: number;
    dead: number;
    duplicate_shipments: number;
  }>(
    `SELECT
       (SELECT count(*) FROM orders o
         WHERE o.status = 'PAID' AND ($1::text IS NULL OR o.tenant_id = $1)
           AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.event_type = 'ORDER_PAID')) AS paid_without_event,
       (SELECT count(*) FROM orders o
         WHERE o.status IN (${TERMINAL_SQL}) AND ($1::text IS NULL OR o.tenant_id = $1)
           AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.event_type = 'ORDER_' || o.status)) AS terminal_without_event,
       (SELECT count(*) FROM outbox e WHERE published_at IS NULL AND dead_at IS NULL
          AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM orders o WHERE o.order_id = e.order_id AND o.tenant_id = $1))) AS pending,
       (SELECT count(*) FROM outbox e WHERE published_at IS NULL AND dead_at IS NOT NULL
          AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM orders o WHERE o.order_id = e.order_id AND o.tenant_id = $1))) AS dead,
       (SELECT count(*) FROM fulfillment f WHERE ship_count > 1
          AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM orders o WHERE o.order_id = f.order_id AND o.tenant_id = $1))) AS duplicate_shipments`,
    [t],
  );
  const row = counts.rows[0];
  if (!row) throw new Error('integrity counts returned no row');
  const disagreeing = await linesDisagreeing(db, t);
  return {
    lines_disagree: disagreeing.length,
    lines_disagree_ids: disagreeing,
    ...row,
    paid_without_event_ids: missing.rows.map((r) => r.order_id),
    terminal_without_event_ids: terminal.rows,
    shipped_without_paid: unpaidShipments.rows.length,
    shipped_without_paid_ids: unpaidShipments.rows.slice(0, MAX_IDS_LISTED),
  };
}
