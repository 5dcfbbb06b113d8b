import type { Executor } from '../../platform/db.ts';
import type { OrderStatus } from '../decide/states.ts';

// Notes for a person (issue 36). Whether a note is still listed is decided here and only here:
// it is listed while nobody acknowledged it and the order has not moved since it was written
// (`attention_version = version`; a transition — the order converging — bumps the version). The
// bookkeeping columns are kept by the trigger of migration 170, beside every writer of a note.

export interface AttentionNote {
  order_id: string;
  tenant_id: string;
  status: OrderStatus;
  attention: string;
  since: Date;
  attempts: number;
}

/** The note is listed: unacknowledged, and about the order as it is now. */
const OPEN = `attention IS NOT NULL AND attention_acked_at IS NULL AND (attention_version IS NULL OR attention_version = version)`;

/** Notes still open, oldest first; a tenant's (every tenant's when undefined). Bounded. */
export async function listOpenNotes(db: Executor, tenantId?: string, limit = 100): Promise<AttentionNote[]> {
  const result = await db.query<AttentionNote>(
    `SELECT order_id, tenant_id, status, attention, coalesce(attention_since, updated_at) AS since,
            recovery_attempts AS attempts
     FROM orders WHERE ${OPEN} AND ($1::text IS NULL OR tenant_id = $1)
     ORDER BY coalesce(attention_since, updated_at), order_id LIMIT $2`,
    [tenantId ?? null, limit],
  );
  return result.rows;
}

export interface Acknowledgement {
  attention: string;
  by: string;
  at: Date;
  status: OrderStatus;
  version: number;
  /** false: it was acknowledged before (by `by`, at `at`), nothing changed now. */
  now: boolean;
}

/**
 * Acknowledges the note of an order: who and when, once. A note acknowledged already keeps its
 * first acknowledgement. undefined: the order has no note.
 */
export async function tryAcknowledgeNote(
  db: Executor,
  orderId: string,
  operator: string,
  at: Date,
): Promise<Acknowledgement | undefined> {
  const result = await db.query<Acknowledgement>(
    `WITH acked AS (
       UPDATE orders SET attention_acked_by = $2, attention_acked_at = $3
       WHERE order_id = $1 AND attention IS NOT NULL AND attention_acked_at IS NULL
       RETURNING attention, attention_acked_by, attention_acked_at, status, version)
     SELECT attention, attention_acked_by AS by, attention_acked_at AS at, status, version, true AS now FROM acked
     UNION ALL
     SELECT attention, attention_acked_by, attention_acked_at, status, version, false FROM orders
     WHERE order_id = $1 AND attention IS NOT NULL AND attention_acked_at IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM acked)`,
    [orderId, operator, at],
  );
  return result.rows[0];
}

/**
 * A note for a person from outside the decider (reconciliation's REVIEW, issue 37). Written only
 * when it says something new: the same note again keeps its first time and its acknowledgement.
 * Never over a note still open: that one (the decider's, or an earlier REVIEW) has not been read
 * yet, and the person who reads it looks at the order anyway.
 */
export async function noteForPerson(db: Executor, orderId: string, note: string): Promise<boolean> {
  const result = await db.query(
    `UPDATE orders SET attention = $2 WHERE order_id = $1 AND attention IS DISTINCT FROM $2 AND NOT (${OPEN})`,
    [orderId, note],
  );
  return (result.rowCount ?? 0) > 0;
}
