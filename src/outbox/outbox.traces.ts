import type { Executor } from '../platform/db.ts';
import { activeSpan, spanContextOf, tracingOn } from '../platform/tracing.ts';

// A recovery pass or a reconciliation run is a trace of its own; it names the orders it touched
// (`flashpay.order_ids`) and links to the trace of each one's latest event (the outbox row keeps
// the trace of the transition that wrote it, migration 200). Only while tracing is on.

/** Links per span at most (OpenTelemetry's default span limit is 128). */
const MAX_LINKED = 100;

export async function linkOrderTraces(db: Executor, orderIds: readonly string[]): Promise<void> {
  const span = activeSpan();
  if (!tracingOn() || !span || orderIds.length === 0) return;
  const ids = [...new Set(orderIds)].slice(0, MAX_LINKED);
  span.setAttribute('flashpay.order_ids', ids);
  span.setAttribute('flashpay.order_count', new Set(orderIds).size);
  const { rows } = await db.query<{ order_id: string; traceparent: string }>(
    `SELECT DISTINCT ON (order_id) order_id, traceparent FROM outbox
     WHERE order_id = ANY($1::text[]) AND traceparent IS NOT NULL ORDER BY order_id, order_version DESC`,
    [ids],
  );
  for (const row of rows) {
    const context = spanContextOf(row.traceparent);
    if (context) span.addLink({ context, attributes: { 'flashpay.order_id': row.order_id } });
  }
}
