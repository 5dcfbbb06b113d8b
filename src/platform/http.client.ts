import http from 'node:http';
import https from 'node:https';
import { injectTraceHeaders, tracingOn } from './tracing.ts';

// Outgoing HTTP (the provider, the fulfilment provider, the outbox's webhook, the fake channel's
// notifications) on node:http with keep-alive agents, not fetch. Measured on this machine, 32
// calls in flight, client and server in one process: fetch 494–752 µs of CPU per call, node:http
// 82–157 (docs/benchmarks/journal.md §12). A pay calls the provider once, recovery 1.2 times per order.

export interface HttpAnswer {
  status: number;
  /** The body as text, at most `maxChars` of it (the rest is read and dropped). */
  text: string;
}

/** A call that got no whole answer within its time: `name` is fetch's, so callers tell it apart. */
export class HttpTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

export interface HttpRequest {
  method?: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
  /** For the whole call: connecting, sending, and reading the answer to its end. */
  timeoutMs: number;
  maxChars?: number;
  /** Aborts the call (its reason is the error). */
  signal?: AbortSignal;
}

// Sockets idle longer than this are closed by us, before a server that keeps them 5 s (Node's
// default) closes one under a request we are sending on it.
const IDLE_SOCKET_MS = 4_000;
const shared = {
  http: new http.Agent({ keepAlive: true, maxSockets: 256, timeout: IDLE_SOCKET_MS }),
  https: new https.Agent({ keepAlive: true, maxSockets: 256, timeout: IDLE_SOCKET_MS }),
};

/** Agents of one's own (a relay bounds its sockets, and closes them with itself). */
export function keepAliveAgents(maxSockets: number) {
  return {
    http: new http.Agent({ keepAlive: true, maxSockets, timeout: IDLE_SOCKET_MS }),
    https: new https.Agent({ keepAlive: true, maxSockets, timeout: IDLE_SOCKET_MS }),
  };
}

/** One call; the process's shared keep-alive agents unless `agents` are given. */
export function httpRequest(
  url: string | URL,
  r: HttpRequest,
  agents: { http: http.Agent; https: https.Agent } = shared,
): Promise<HttpAnswer> {
  const target = typeof url === 'string' ? new URL(url) : url;
  const secure = target.protocol === 'https:';
  const transport = secure ? https : http;
  const headers: Record<string, string | number> = { ...r.headers };
  if (r.body !== undefined) headers['content-length'] = Buffer.byteLength(r.body);
  // The callee continues our trace (the provider, the webhook consumer, the fulfilment provider).
  if (tracingOn()) injectTraceHeaders(headers);
  return new Promise<HttpAnswer>((resolve, reject) => {
    let settled = false;
    let timedOut = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      r.signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const fail = (error: unknown) =>
      settle(() => reject(timedOut ? new HttpTimeoutError(`no answer within ${r.timeoutMs} ms`) : error));
    const request = transport.request(
      target,
      { method: r.method ?? 'GET', agent: secure ? agents.https : agents.http, headers },
      (response) => {
        let text = '';
        const max = r.maxChars ?? Infinity;
        response.setEncoding('utf8');
        // Read it all, so that the socket can be reused; keep what the caller asked for.
        response.on('data', (chunk: string) => {
          if (text.length < max) text += chunk;
        });
        response.on('error', fail);
        response.on('end', () => settle(() => resolve({ status: response.statusCode ?? 0, text: text.slice(0, max) })));
        // Closed before its end: cut off (a timeout, an abort or the peer).
        response.on('close', () => fail(new Error('the answer was cut off')));
      },
    );
    const timer = setTimeout(() => {
      timedOut = true;
      request.destroy(new HttpTimeoutError(`no answer within ${r.timeoutMs} ms`));
    }, r.timeoutMs);
    // A fresh error per request, named as the reason: one signal aborts many requests, and a library
    // that tags an error with its socket (urllib, under alipay-sdk, patches Socket#destroy) throws
    // when the same error object is destroyed on a second socket.
    const onAbort = () => {
      const reason: unknown = r.signal?.reason;
      const error = new Error(reason instanceof Error ? reason.message : 'aborted', { cause: reason });
      if (reason instanceof Error) error.name = reason.name;
      request.destroy(error);
    };
    if (r.signal?.aborted) onAbort();
    else r.signal?.addEventListener('abort', onAbort, { once: true });
    request.on('error', fail);
    request.end(r.body);
  });
}
