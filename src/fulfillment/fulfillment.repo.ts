import type { Executor, Tx } from '../platform/db.ts';
import type { OutboxEvent } from '../outbox/index.ts';
import type { ShippedLine } from './fulfillment.event.ts';

// What an arrival did. ERROR is not an effect: it records an arrival whose transaction failed.
export const EFFECTS = ['APPLIED', 'DUPLICATE', 'STALE'] as const;
export type Effect = (typeof EFFECTS)[number];
export type ArrivalOutcome = Effect | 'ERROR';

/** First check: the inbox. A conflicting event_id means this event was seen before (DUPLICATE). */
export async function tryRegisterInbox(tx: Tx, eventId: string, now: Date): Promise<boolean> {
  // A concurrent insert of the same id waits on the primary key until the first commits, then
  // conflicts; so of N simultaneous copies exactly one registers.
  const result = await tx.query(
    `INSERT INTO ful_inbox (event_id, received_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
    [eventId, now],
  );
  return result.rowCount === 1;
}

export interface Advance {
  orderId: string;
  version: number;
  eventType: string;
  /** 1 when this event ships the order (ORDER_PAID), else 0. */
  ships: number;
  /** The lines it ships (every line of an ORDER_PAID event), else null: what was shipped stays. */
  lines: readonly ShippedLine[] | null;
  now: Date;
}

/**
 * Second check: the version. The row only moves to a greater version; an equal or older one
 * updates nothing (INSERT … ON CONFLICT DO UPDATE … WHERE), which is STALE. Shipping rides on the
 * same statement, so an order can only be shipped by an event that advanced it.
 */
export async function tryAdvance(tx: Tx, advance: Advance): Promise<boolean> {
  const result = await tx.query(
    `INSERT INTO fulfillment (order_id, last_version, last_event_type, ship_count, updated_at, shipped_lines)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb)
     ON CONFLICT (order_id) DO UPDATE SET
       last_version = EXCLUDED.last_version, last_event_type = EXCLUDED.last_event_type,
       ship_count = fulfillment.ship_count + EXCLUDED.ship_count, updated_at = EXCLUDED.updated_at,
       shipped_lines = COALESCE(EXCLUDED.shipped_lines, fulfillment.shipped_lines)
     WHERE fulfillment.last_version < EXCLUDED.last_version`,
    [
      advance.orderId,
      advance.version,
      advance.eventType,
      advance.ships,
      advance.now,
      advance.lines ? JSON.stringify(advance.lines) : null,
    ],
  );
  return result.rowCount === 1;
}

export async function recordArrival(
  db: Executor,
  event: OutboxEvent,
  outcome: ArrivalOutcome,
  now: Date,
  detail?: string,
): Promise<void> {
  await db.query(
    `INSERT INTO ful_received (event_id, order_id, event_type, version, effect, detail, at)
     VALUES ($1, $2, $3, $4, $5, left($6, 2000), $7)`,
    [event.event_id, event.order_id, event.event_type, event.order_version, outcome, detail ?? null, now],
  );
}

export interface Arrival {
  event_id: string;
  event_type: string;
  version: number;
  effect: Effect;
  at: string;
}

export interface FulfillmentView {
  order_id: string;
  ship_count: number;
  last_version: number;
  last_event_type: string;
  /** Every line the ORDER_PAID event shipped (issue 38); null before one arrived. */
  shipped_lines: ShippedLine[] | null;
  arrivals: Arrival[];
  /** Arrivals whose transaction failed (the sender retried them); not part of `arrivals`. */
  failed_arrivals: number;
}

// One order sees a handful of events; this only bounds a pathological redelivery storm.
const MAX_ARRIVALS_LISTED = 500;

/** The consumer's view of one order, or null when nothing has been applied for it. */
export async function findFulfillmentView(db: Executor, orderId: string): Promise<FulfillmentView | null> {
  const row = await db.query<{
    order_id: string;
    ship_count: number;
    last_version: number;
    last_event_type: string;
    shipped_lines: ShippedLine[] | null;
  }>(`SELECT order_id, ship_count, last_version, last_event_type, shipped_lines FROM fulfillment WHERE order_id = $1`, [
    orderId,
  ]);
  const state = row.rows[0];
  if (!state) return null;
  const arrivals = await db.query<Arrival>(
    `SELECT event_id, event_type, version, effect,
            to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
     FROM ful_received WHERE order_id = $1 AND effect <> 'ERROR' ORDER BY id LIMIT $2`,
    [orderId, MAX_ARRIVALS_LISTED],
  );
  const failed = await db.query<{ n: number }>(
    `SELECT count(*) AS n FROM ful_received WHERE order_id = $1 AND effect = 'ERROR'`,
    [orderId],
  );
  return { ...state, arrivals: arrivals.rows, failed_arrivals: failed.rows[0]?.n ?? 0 };
}
