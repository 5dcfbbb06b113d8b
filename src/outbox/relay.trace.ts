import { contextOf, SpanKind, spanContextOf, tracingOn, withSpan, type Link } from '../platform/tracing.ts';
import type { OutboxRow } from './outbox.repo.ts';

// A delivery continues the trace of the transition that wrote its event (the row's traceparent,
// migration 200): the span is a child of the first event's transaction and links to every event's,
// so one order followed from its request reaches the broker and the consumer, and a batch of many
// orders is found from each of them. The sinks send the active context onward (http header, NATS
// and RabbitMQ message headers).

/** Runs `deliver` in a PRODUCER span for `rows`; just runs it while tracing is off. */
export function deliverySpan<T>(rows: readonly OutboxRow[], deliver: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return deliver();
  const links: Link[] = [];
  for (const row of rows) {
    const context = spanContextOf(row.traceparent);
    if (context) links.push({ context, attributes: { 'flashpay.order_id': row.order_id } });
  }
  const first = rows.find((row) => row.traceparent);
  return withSpan(
    rows.length === 1 ? `outbox deliver ${rows[0]!.event_type}` : 'outbox deliver batch',
    {
      kind: SpanKind.PRODUCER,
      parent: contextOf(first?.traceparent),
      links,
      attributes: {
        'messaging.operation.type': 'send',
        'messaging.batch.message_count': rows.length,
        'flashpay.event_ids': rows.map((row) => String(row.event_id)),
      },
    },
    deliver,
  );
}
