import http from 'node:http';
import https from 'node:https';
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
// A relay delivers one claimed batch concurrently; batches are at most this large.
const MAX_SOCKETS = 64;

/**
 * POSTs each event as signed JSON; any 2xx is the acknowledgement, anything else is a failed
 * attempt. node:http with a keep-alive agent rather than fetch: it costs a fraction of the CPU per
 * request (docs/benchmarks.md), and the relay shares its event loop with the API.
 */
export function createHttpSink(options: HttpSinkOptions): Sink {
  const url = new URL(options.url);
  const transport = url.protocol === 'https:' ? https : http;
  const agent = new transport.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  return {
    deliver(event: OutboxEvent): Promise<void> {
      const body = JSON.stringify(event);
      return new Promise<void>((resolve, reject) => {
        const request = transport.request(
          url,
          {
            method: 'POST',
            agent,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              [SIGNATURE_HEADER]: signPayload(options.secret, body),
            },
          },
          (response) => {
            let text = '';
            response.setEncoding('utf8');
            // Read it all, so the connection is reusable; keep only what an error message needs.
            response.on('data', (chunk: string) => {
              if (text.length < MAX_ERROR_BODY_CHARS) text += chunk;
            });
            response.on('error', reject);
            response.on('end', () => {
              clearTimeout(timer);
              const status = response.statusCode ?? 0;
              if (status >= 200 && status <= 299) resolve();
              else reject(new Error(`webhook answered HTTP ${status}: ${text.slice(0, MAX_ERROR_BODY_CHARS)}`));
            });
          },
        );
        const timer = setTimeout(
          () => request.destroy(new Error(`webhook did not answer within ${options.timeoutMs} ms`)),
          options.timeoutMs,
        );
        request.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
        request.end(body);
      });
    },
    async close(): Promise<void> {
      agent.destroy();
    },
  };
}
