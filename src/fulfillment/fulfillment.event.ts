import { isEventType, type OutboxEvent } from '../outbox/index.ts';

// The wire shape of an order event is OrderEventBody (fulfillment.schemas.ts), which the HTTP
// route validates with; broker messages are parsed here to the same rules.
function isBoundedString(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= 64;
}

/** A line the consumer ships: the SKU and how many units, as the event names them. */
export interface ShippedLine {
  sku: string;
  quantity: number;
}

// An order has at most 20 lines (the contract's limit).
const MAX_EVENT_LINES = 20;

function isEventLine(value: unknown): value is { sku: string; quantity: number } {
  const line = value as { sku?: unknown; quantity?: unknown } | null;
  return (
    typeof line === 'object' &&
    line !== null &&
    isBoundedString(line.sku) &&
    Number.isSafeInteger(line.quantity) &&
    (line.quantity as number) >= 1
  );
}

/**
 * Every line an event names (issue 38): `payload.lines`, or for an event written before lines
 * travelled, the one line of its `sku` and `quantity`; empty when it names none. Throws on a
 * malformed `lines` (a bug upstream).
 */
export function eventLines(payload: Record<string, unknown>): ShippedLine[] {
  const { lines, sku, quantity } = payload;
  if (lines === undefined)
    return isEventLine({ sku, quantity }) ? [{ sku: sku as string, quantity: quantity as number }] : [];
  if (!Array.isArray(lines) || lines.length < 1 || lines.length > MAX_EVENT_LINES)
    throw new Error(`payload.lines must be an array of 1..${MAX_EVENT_LINES} lines`);
  return lines.map((line, i) => {
    if (!isEventLine(line)) throw new Error(`payload.lines[${i}] needs a sku and a positive integer quantity`);
    return { sku: line.sku, quantity: line.quantity };
  });
}

/** What an event ships: every line of an ORDER_PAID event, null for any other type or no line. */
export function shippedLines(event: OutboxEvent): ShippedLine[] | null {
  if (event.event_type !== 'ORDER_PAID') return null;
  const lines = eventLines(event.payload);
  return lines.length === 0 ? null : lines;
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
  eventLines(payload as Record<string, unknown>);
  return {
    event_id,
    order_id,
    event_type,
    order_version: order_version as number,
    payload: payload as Record<string, unknown>,
  };
}
