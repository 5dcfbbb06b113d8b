// The events an order emits, as they travel from the outbox to every sink and consumer.
// The closed list is the routing table: a type that is not here is a bug in the writer, and the
// relay parks it as dead instead of delivering or dropping it (seed 004: "unknown types raise").
export const EVENT_TYPES = ['ORDER_PAID', 'ORDER_FAILED', 'ORDER_CANCELLED', 'ORDER_REFUNDED'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** What a sink carries. `event_id` is the outbox row id as an opaque string: the dedup key everywhere. */
export interface OutboxEvent {
  event_id: string;
  order_id: string;
  event_type: string;
  order_version: number;
  payload: Record<string, unknown>;
}

/**
 * Somewhere events go. `deliver` resolves only once the far side has durably accepted the event.
 * `deliverBatch`, when a sink has it, hands over many events at once and answers per event, in
 * the order given: null = durably accepted, an Error = not accepted (retry it). It rejects only
 * when nothing can be said about any event (then all are retried).
 */
export interface Sink {
  deliver(event: OutboxEvent): Promise<void>;
  deliverBatch?(events: readonly OutboxEvent[]): Promise<(Error | null)[]>;
  close(): Promise<void>;
}
