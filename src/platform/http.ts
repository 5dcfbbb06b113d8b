import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { CommitOutcomeUnknownError, isBusyError, isConnectionError } from './db.ts';
import { AppError, problem, type ErrorCode, type Problem } from './errors.ts';
import { clientErrorHandler, frameworkErrors, refuseControlCharacters } from './http.input.ts';
import { failedAuthLimiter, rateLimiter } from './ratelimit.ts';
import { logTraceIds, tracingOn } from './tracing.ts';
import { traceRequests } from './tracing.http.ts';

// find-my-way's default; named because the 414 answer states it.
const MAX_PARAM_LENGTH = 100;

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: string;
  }
}

/** A route as the router holds it: what a request can reach, whatever its raw URL said. */
export interface RouteEntry {
  method: string;
  url: string;
}

// Filled by an onRoute hook as routes are declared (the automatic HEAD of each GET included), so a
// test can walk every route the router matches — a route added later is covered without a list.
const routeTables = new WeakMap<FastifyInstance, RouteEntry[]>();

/** Every route declared on `app` (built by buildHttp), in declaration order. */
export function routesOf(app: FastifyInstance): readonly RouteEntry[] {
  return routeTables.get(app) ?? [];
}

export interface HttpOptions {
  bodyLimitBytes: number;
  /** Per principal (or client address) per route; absent or 0: no limit. */
  rateLimitPerMinute?: number;
  /** 401s per minute per client address before 429 (failedAuthLimiter); absent or 0: no limit. */
  failedAuthPerMinute?: number;
  /** Peers (IPs, CIDRs) whose X-Forwarded-For names the client; absent or empty: none. */
  trustedProxies?: readonly string[];
  logLevel?: string;
  /**
   * What close() does with open sockets: 'idle' (default) lets requests in flight answer; 'all'
   * cuts them (the provider double, whose held faults must not keep a close open).
   */
  closeConnections?: 'idle' | 'all';
}

/** Sends an RFC 9457 problem document. */
export function sendProblem(reply: FastifyReply, body: Problem, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(body.status).headers(headers).type('application/problem+json').send(body);
}

function fromFastifyError(error: FastifyError, bodyLimitBytes: number): Problem {
  if (error.validation) {
    const first = error.validation[0];
    const where = error.validationContext ?? 'body';
    const field = first?.instancePath ? `${where}${first.instancePath.replace(/\//g, '.')}` : where;
    const params = first?.params as { missingProperty?: string; additionalProperty?: string } | undefined;
    if (params?.missingProperty)
      return problem('VALIDATION', `${field}.${params.missingProperty} is required`, {
        field: `${field}.${params.missingProperty}`,
      });
    // The unknown field is named, so a client sees which one to drop.
    if (params?.additionalProperty)
      return problem('VALIDATION', `${field}.${params.additionalProperty} is not a known field`, {
        field: `${field}.${params.additionalProperty}`,
      });
    return problem('VALIDATION', `${field} ${first?.message ?? 'is invalid'}`, { field });
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return problem('PAYLOAD_TOO_LARGE', `the body is larger than the limit of ${bodyLimitBytes} bytes`, {
      limit: bodyLimitBytes,
    });
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return problem('VALIDATION', 'Content-Type must be application/json');
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return problem('VALIDATION', 'body must be a JSON object');
  // Any other refusal of the request itself (a bad Content-Length, …): the client's to fix.
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500)
    return problem('VALIDATION', error.message);
  return problem('INTERNAL', 'unexpected error');
}

/**
 * A Fastify instance with the conventions every flashpay server shares: JSON bodies kept raw
 * (notification signatures are computed over the exact bytes), a body limit, and one error
 * handler that renders every failure as problem+json with a stable code.
 */
export function buildHttp(options: HttpOptions): FastifyInstance {
  const app = Fastify({
    bodyLimit: options.bodyLimitBytes,
    // request.ip is the socket's peer unless that peer is a configured proxy: then the nearest
    // address in X-Forwarded-For it did not append itself (what rate limits are keyed by).
    trustProxy: options.trustedProxies && options.trustedProxies.length > 0 ? [...options.trustedProxies] : false,
    // Logs go to stderr: stdout carries what commands print for people and scripts.
    // With tracing on, every log line names the trace and span it was written in.
    logger:
      options.logLevel && options.logLevel !== 'silent'
        ? { level: options.logLevel, stream: process.stderr, ...(tracingOn() ? { mixin: logTraceIds } : {}) }
        : false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    // On close, idle keep-alive sockets go at once; a request in flight finishes and gets its
    // real answer (closeGracefully bounds the wait). `true` cut pays whose charge had gone through.
    forceCloseConnections: options.closeConnections === 'all' ? true : 'idle',
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrors(MAX_PARAM_LENGTH),
    clientErrorHandler,
  });

  // Only while tracing is on: off, a request pays nothing for it.
  if (tracingOn()) traceRequests(app);

  const table: RouteEntry[] = [];
  routeTables.set(app, table);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) table.push({ method, url: route.url });
  });

  // While closing, every answer says `Connection: close`: a keep-alive socket whose request was
  // in flight when close began is let go after its answer instead of idling out (72 s) and
  // holding the close open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Callback style: an async hook cost a promise and a turn on every answer.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  // Order matters: a flood is refused before its content is looked at.
  if (options.rateLimitPerMinute) app.addHook('preValidation', rateLimiter({ perMinute: options.rateLimitPerMinute }));
  app.addHook('preValidation', refuseControlCharacters);

  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    request.rawBody = text;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new AppError('VALIDATION', 'body is not valid JSON'), undefined);
    }
  });

  const failedAuth = failedAuthLimiter({ perMinute: options.failedAuthPerMinute ?? 0 });
  app.setErrorHandler((error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) {
      const refused = error.code === 'UNAUTHENTICATED' ? (failedAuth(request.ip) ?? error) : error;
      return sendProblem(reply, refused.toProblem(), refused.headers);
    }
    // The connection died with the COMMIT in flight: it may have happened. Say so; a retry with the
    // same Idempotency-Key replays it if it did and executes it if it did not.
    if (error instanceof CommitOutcomeUnknownError) {
      request.log.warn({ err: error }, 'commit outcome unknown');
      return sendProblem(
        reply,
        problem(
          'UNAVAILABLE',
          'the database connection was lost while committing; the outcome is unknown: retry with the same Idempotency-Key to learn it',
          { outcome: 'unknown' },
        ),
        { 'Retry-After': '1' },
      );
    }
    // The database (and so the idempotency key store) is unreachable: nothing executed, retry later.
    if (isConnectionError(error))
      return sendProblem(reply, problem('UNAVAILABLE', 'the database is unreachable; nothing was executed'), {
        'Retry-After': '1',
      });
    // A lock or statement timeout rolled the transaction back: overloaded, not broken.
    if (isBusyError(error))
      return sendProblem(reply, problem('UNAVAILABLE', 'the database is busy; nothing was executed'), {
        'Retry-After': '1',
      });
    const body = fromFastifyError(error as FastifyError, options.bodyLimitBytes);
    if (body.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, body);
  });

  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problem('NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`)),
  );
  return app;
}

export function fail(code: ErrorCode, detail: string, extra: Record<string, unknown> = {}): never {
  throw new AppError(code, detail, extra);
}

const IDLE_SWEEP_MS = 50;

/**
 * Stops accepting, lets the requests in flight finish and answer (new requests on open sockets
 * get 503 meanwhile), and past `graceMs` cuts what is left. True when everything finished in time.
 */
export async function closeGracefully(app: FastifyInstance, graceMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const closed = app.close().then(() => true);
  // A keep-alive socket whose request finished after close() began is idle now: let it go too.
  const sweeper = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
  const expired = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), graceMs);
  });
  const drained = await Promise.race([closed, expired]);
  clearTimeout(timer);
  clearInterval(sweeper);
  if (!drained) {
    app.server.closeAllConnections();
    await closed;
  }
  return drained;
}
