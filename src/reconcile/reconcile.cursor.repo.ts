import type { Executor } from '../platform/db.ts';
import type { LedgerView } from './reconcile.rules.ts';
import type { Totals } from './reconcile.report.ts';

// The incremental reconciliation's state (migrations/120_reconcile_cursor.sql).

export interface CursorRow {
  version: number;
  statement_after: string | null;
  /** NULL until a full pass has built the state: then the next pass must be a full one. */
  orders_snapshot: string | null;
  channel_net: number;
  totals: Totals;
}

/**
 * The cursor row, locked for this pass. The first statement of the pass's REPEATABLE READ
 * transaction: a second pass waits here, and when the first commits its cursor, the second fails
 * to serialize and starts over from the new cursor (inTx retries 40001) — it never overwrites it.
 */
export async function lockCursor(tx: Executor): Promise<CursorRow> {
  await tx.query('INSERT INTO reconcile_cursor (id) VALUES (1) ON CONFLICT (id) DO NOTHING');
  const result = await tx.query<{
    version: string;
    statement_after: string | null;
    orders_snapshot: string | null;
    channel_net: string;
    paid_sum: string;
    paid: number;
    paid_lines: number;
    compensating_lines: number;
    statuses: Record<string, number>;
  }>(
    `SELECT version, statement_after, orders_snapshot::text AS orders_snapshot, channel_net, paid_sum, paid,
            paid_lines, compensating_lines, statuses
     FROM reconcile_cursor WHERE id = 1 FOR UPDATE`,
  );
  const row = result.rows[0];
  if (!row) throw new Error('reconcile_cursor: no row after insert');
  return {
    version: Number(row.version),
    statement_after: row.statement_after,
    orders_snapshot: row.orders_snapshot,
    channel_net: Number(row.channel_net),
    totals: {
      statuses: row.statuses,
      paid: row.paid,
      paid_sum: Number(row.paid_sum),
      paid_lines: row.paid_lines,
      compensating_lines: row.compensating_lines,
    },
  };
}

/** This transaction's snapshot: what the pass covers on our side. */
export async function currentSnapshot(tx: Executor): Promise<string> {
  const result = await tx.query<{ s: string }>('SELECT pg_current_snapshot()::text AS s');
  return result.rows[0]?.s ?? '';
}

/** Commits what the pass covered, in the pass's transaction: a crash before it re-reads the same changes. */
export async function saveCursor(
  tx: Executor,
  read: CursorRow,
  next: { statementAfter: string; snapshot: string; channelNet: number; totals: Totals; full: boolean },
): Promise<void> {
  const t = next.totals;
  const result = await tx.query(
    `UPDATE reconcile_cursor SET version = version + 1, statement_after = $2, orders_snapshot = $3::pg_snapshot,
       channel_net = $4, paid_sum = $5, paid = $6, paid_lines = $7, compensating_lines = $8, statuses = $9,
       passes = passes + 1, full_at = CASE WHEN $10 THEN now() ELSE full_at END, updated_at = now()
     WHERE id = 1 AND version = $1`,
    [
      read.version,
      next.statementAfter,
      next.snapshot,
      next.channelNet,
      t.paid_sum,
      t.paid,
      t.paid_lines,
      t.compensating_lines,
      JSON.stringify(t.statuses),
      next.full,
    ],
  );
  // Unreachable while lockCursor holds the row; kept as the guard the cursor's correctness rests on.
  if (result.rowCount !== 1) throw new Error('reconcile_cursor moved under this pass');
}

/** Orders whose transitions committed since `snapshot` (not visible in it), one keyset page. */
export async function changedOrderIds(tx: Executor, snapshot: string, after: string, limit: number): Promise<string[]> {
  const result = await tx.query<{ order_id: string }>(
    `SELECT DISTINCT order_id FROM order_transitions
     WHERE recon_xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(recon_xid, $1::pg_snapshot)
       AND order_id > $2
     ORDER BY order_id LIMIT $3`,
    [snapshot, after, limit],
  );
  return result.rows.map((r) => r.order_id);
}

/** Orders the last pass left pending or mismatched: checked again until they settle. */
export async function openOrderIds(tx: Executor, after: string, limit: number): Promise<string[]> {
  const result = await tx.query<{ order_id: string }>(
    'SELECT order_id FROM reconcile_orders WHERE open AND order_id > $1 ORDER BY order_id LIMIT $2',
    [after, limit],
  );
  return result.rows.map((r) => r.order_id);
}

export interface StateRow extends LedgerView {
  order_id: string;
  status: string | null;
  amount: number;
  lines: number;
  open: boolean;
}

export async function readState(tx: Executor, ids: string[]): Promise<Map<string, StateRow>> {
  const result = await tx.query<StateRow>(
    `SELECT order_id, status, amount::float8 AS amount, lines, charges, charged::float8 AS charged, refunds,
            refunded::float8 AS refunded, open
     FROM reconcile_orders WHERE order_id = ANY($1)`,
    [ids],
  );
  return new Map(result.rows.map((r) => [r.order_id, r]));
}

/** Writes the rows of one chunk (sorted by id: two writers never lock them in opposite orders). */
export async function writeState(tx: Executor, rows: StateRow[], drop: string[]): Promise<void> {
  if (drop.length > 0) await tx.query('DELETE FROM reconcile_orders WHERE order_id = ANY($1)', [drop]);
  if (rows.length === 0) return;
  rows.sort((a, b) => (a.order_id < b.order_id ? -1 : a.order_id > b.order_id ? 1 : 0));
  await tx.query(
    `INSERT INTO reconcile_orders (order_id, status, amount, lines, charges, charged, refunds, refunded, open)
     SELECT order_id, status, amount, lines, charges, charged, refunds, refunded, open
     FROM jsonb_to_recordset($1::jsonb) AS r(order_id text, status text, amount bigint, lines int, charges int,
                                            charged bigint, refunds int, refunded bigint, open boolean)
     ON CONFLICT (order_id) DO UPDATE SET status = EXCLUDED.status, amount = EXCLUDED.amount, lines = EXCLUDED.lines,
       charges = EXCLUDED.charges, charged = EXCLUDED.charged, refunds = EXCLUDED.refunds,
       refunded = EXCLUDED.refunded, open = EXCLUDED.open`,
    [JSON.stringify(rows)],
  );
}

/** A full pass rebuilds the state from nothing. */
export async function clearState(tx: Executor): Promise<void> {
  await tx.query('DELETE FROM reconcile_orders');
}
