import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  bindEmitter,
  extractTraceHeaders,
  markError,
  SpanKind,
  startSpan,
  within,
  withSpanIn,
  type Span,
} from './tracing.ts';

// The server span of every request (installed by buildHttp only while tracing is on). It continues
// an incoming W3C `traceparent` and is active for the whole request: the body is read in it (the
// raw request's listeners are bound to it), the handler, its transactions and its provider calls
// run in it, so their spans are its children.

const spans = new WeakMap<FastifyRequest, Span>();

export function traceRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const parent = extractTraceHeaders(request.headers);
    const span = startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      parent,
      attributes: {
        'http.request.method': request.method,
        'http.route': route,
        // The path, never the query string: a query may carry what a trace must not.
        'url.path': request.url.split('?')[0] ?? '',
      },
    });
    spans.set(request, span);
    const ctx = withSpanIn(parent, span);
    bindEmitter(ctx, request.raw);
    within(ctx, done);
  });
  const end = (request: FastifyRequest, status: number | undefined) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    if (status !== undefined) span.setAttribute('http.response.status_code', status);
    if (status === undefined || status >= 500) markError(span, status === undefined ? 'aborted' : `HTTP ${status}`);
    span.end();
  };
  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    end(request, undefined);
    done();
  });
}
