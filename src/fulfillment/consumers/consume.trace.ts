import { contextOf, SpanKind, spanContextOf, tracingOn, withSpan, type Link } from '../../platform/tracing.ts';

// A broker delivery continues the trace its message carries (the relay's PRODUCER span put its
// `traceparent` in the NATS or RabbitMQ headers, outbox/relay.trace.ts): the consumer's span is a
// child of the first message's and links to every message's, so one order followed from its
// request reaches its shipment, and a batch of many orders is found from each of them.

export interface Consumed {
  /** The message's `traceparent` header, as the broker delivered it (absent: a trace of its own). */
  traceparent: string | undefined;
  event: { event_id: string | number; event_type: string; order_id: string };
}

/** Runs `apply` in a CONSUMER span for `messages`; just runs it while tracing is off. */
export function consumeSpan<T>(
  system: 'nats' | 'rabbitmq',
  messages: readonly Consumed[],
  apply: () => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return apply();
  const links: Link[] = [];
  for (const { traceparent, event } of messages) {
    const context = spanContextOf(traceparent);
    if (context) links.push({ context, attributes: { 'flashpay.order_id': event.order_id } });
  }
  const first = messages.find((m) => m.traceparent);
  return withSpan(
    messages.length === 1 ? `fulfilment consume ${messages[0]!.event.event_type}` : 'fulfilment consume batch',
    {
      kind: SpanKind.CONSUMER,
      parent: contextOf(first?.traceparent),
      links,
      attributes: {
        'messaging.system': system,
        'messaging.operation.type': 'process',
        'messaging.batch.message_count': messages.length,
        'flashpay.event_ids': messages.map((m) => String(m.event.event_id)),
      },
    },
    apply,
  );
}

/** A header's value as text: RabbitMQ may hand a string header back as a Buffer. */
export function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}
