import type { Executor } from '../platform/db.ts';

export interface OutboxLag {
  pending: number;
  /** Age of the oldest undelivered event at `now`, 0 when none waits. */
  oldest_pending_ms: number;
  dead: number;
}

/** How far the relay is behind, for the console; tenant-scoped through the event's order. */
export async function outboxLag(db: Executor, now: Date, tenantId?: string): Promise<OutboxLag> {
  const result = await db.query<{ pending: number; oldest: Date | null; dead: number }>(
    `SELECT count(*) FILTER (WHERE e.published_at IS NULL AND e.dead_at IS NULL)::int AS pending,
            min(e.created_at) FILTER (WHERE e.published_at IS NULL AND e.dead_at IS NULL) AS oldest,
            count(*) FILTER (WHERE e.dead_at IS NOT NULL)::int AS dead
     FROM outbox e JOIN orders o ON o.order_id = e.order_id
     WHERE ($1::text IS NULL OR o.tenant_id = $1) AND (e.published_at IS NULL OR e.dead_at IS NOT NULL)`,
    [tenantId ?? null],
  );
  const row = result.rows[0];
  return {
    pending: row?.pending ?? 0,
    oldest_pending_ms: row?.oldest ? Math.max(0, now.getTime() - row.oldest.getTime()) : 0,
    dead: row?.dead ?? 0,
  };
}
