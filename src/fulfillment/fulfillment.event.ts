import { isEventType, type OutboxEvent } from '../outbox/index.ts';

// The wire shape of an order event is OrderEventBody (fulfillment.schemas.ts), which the HTTP
// route validates with; broker messages are parsed here to the same rules.
function isBoundedString(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= 64;
}

/** Parses a broker message body; throws with the offending field (such a message is a bug upstream). */
export function parseEvent(text: string): OutboxEvent {
  const value = JSON.parse(text) as Record<string, unknown> | null;
  if (typeof value !== 'object' || value === null) throw new Error('event is not a JSON object');
  const { event_id, order_id, event_type, order_version, payload } = value;
  if (!isBoundedString(event_id)) throw new Error('event_id must be a string of 1..64 characters');
  if (!isBoundedString(order_id)) throw new Error('order_id must be a string of 1..64 characters');
  if (typeof event_type !== 'string' || !isEventType(event_type))
    throw new Error(`unknown event_type ${JSON.stringify(event_type)}`);
  if (!Number.isInteger(order_version) || (order_version as number) < 1)
    throw new Error('order_version must be a positive integer');
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
    throw new Error('payload must be an object');
  return {
    event_id,
    order_id,
    event_type,
    order_version: order_version as number,
    payload: payload as Record<string, unknown>,
  };
}
