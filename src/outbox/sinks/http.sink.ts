import { signPayload, SIGNATURE_HEADER } from '../../platform/signature.ts';
import type { OutboxEvent, Sink } from '../outbox.events.ts';

export interface HttpSinkOptions {
  /** The consumer's webhook, e.g. http://127.0.0.1:8080/v1/fulfillment/events. */
  url: string;
  /** Shared HMAC secret; the consumer rejects anything it cannot verify. */
  secret: string;
  /** Per request; keep it below the relay lease so a hung consumer cannot outlive the claim. */
  timeoutMs: number;
}

// Only this much of an error body is kept in outbox.last_error.
const MAX_ERROR_BODY_CHARS = 300;

/** POSTs each event as signed JSON; any 2xx is the acknowledgement, anything else is a failed attempt. */
export function createHttpSink(options: HttpSinkOptions): Sink {
  return {
    async deliver(event: OutboxEvent): Promise<void> {
      const body = JSON.stringify(event);
      const response = await fetch(options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(options.secret, body) },
        body,
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      const text = await response.text(); // read it all so the connection is reusable
      if (response.status < 200 || response.status > 299) {
        throw new Error(`webhook answered HTTP ${response.status}: ${text.slice(0, MAX_ERROR_BODY_CHARS)}`);
      }
    },
    async close(): Promise<void> {},
  };
}
