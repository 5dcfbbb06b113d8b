import type { Executor } from '../platform/db.ts';
import type { OutboxEvent } from './outbox.events.ts';

// What `flashpay listen` follows: events as the relay delivers them (published_at set), read
// again over a window so that a mark committed late with an earlier timestamp is not missed; the
// caller drops what it has already seen by event_id.

/** A read is at most this many events; the follower reads again at once when it was full. */
export const FOLLOW_BATCH = 200;

export interface DeliveredEvent extends OutboxEvent {
  published_at: Date;
}

/** Where the next read starts: after (published_at, event_id), at the database's precision. */
export interface FollowCursor {
  at: string;
  eventId: string;
}

/** Up to FOLLOW_BATCH events delivered after the cursor, in delivery order, and the cursor after them. */
export async function readDeliveredAfter(
  db: Executor,
  cursor: FollowCursor,
): Promise<{ events: DeliveredEvent[]; next: FollowCursor }> {
  const { rows } = await db.query<DeliveredEvent & { cursor_at: string }>(
    `SELECT event_id::text AS event_id, order_id, event_type, order_version, payload, published_at,
            published_at::text AS cursor_at
       FROM outbox
      WHERE published_at IS NOT NULL AND (published_at, event_id) > ($1::timestamptz, $2::bigint)
      ORDER BY published_at, event_id
      LIMIT ${FOLLOW_BATCH}`,
    [cursor.at, cursor.eventId],
  );
  const last = rows.at(-1);
  const events = rows.map(({ cursor_at: _, ...event }) => event);
  return { events, next: last ? { at: last.cursor_at, eventId: last.event_id } : cursor };
}

/** The database's clock, so the follower's window does not depend on this machine's. */
export async function databaseNow(db: Executor): Promise<Date> {
  const { rows } = await db.query<{ now: Date }>('SELECT now() AS now');
  return rows[0]!.now;
}

/** One event, delivered or not (`published_at` null while it waits): what `flashpay listen --resend` sends again. */
export async function findEvent(
  db: Executor,
  eventId: string,
): Promise<(OutboxEvent & { published_at: Date | null }) | undefined> {
  const { rows } = await db.query<OutboxEvent & { published_at: Date | null }>(
    `SELECT event_id::text AS event_id, order_id, event_type, order_version, payload, published_at
       FROM outbox WHERE event_id = $1::bigint`,
    [eventId],
  );
  return rows[0];
}
