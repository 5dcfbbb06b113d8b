import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';

// Traces (issue 53, CONTRACT.md "Traces"). This file loads only @opentelemetry/api, whose calls
// are no-ops until an SDK registers; the SDK is imported by startTracing only when OpenTelemetry's
// own variables ask for it (tracing.sdk.ts). Every hook on a hot path first reads `tracingOn()`, a
// boolean, and does nothing else while it is false: with the variables unset the service runs as
// it did before tracing existed (bench in docs/observability.md).

export { SpanKind };
/** The empty context: a span started under it begins a trace of its own. */
export const ROOT = ROOT_CONTEXT;
export type { Span, Context, Link };

let on = false;

/** True once startTracing registered the SDK in this process. */
export function tracingOn(): boolean {
  return on;
}

/**
 * Whether OpenTelemetry's variables turn tracing on: an OTLP endpoint or an exporter other than
 * `none`, and not OTEL_SDK_DISABLED. Unset means off (the specification's exporter default `otlp`
 * would send to localhost:4318 from every process that never asked for it).
 */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporter === 'none') return false;
  if (exporter !== '') return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

let stopSdk: (() => Promise<void>) | undefined;

/** Registers the SDK when the variables ask for it; idempotent. Answers whether tracing is on. */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (on || !tracingWanted(env)) return on;
  const { registerSdk } = await import('./tracing.sdk.ts');
  stopSdk = registerSdk(env);
  on = true;
  return true;
}

/** Exports what is buffered and stops (a process that exits without it loses its last spans). */
export async function stopTracing(): Promise<void> {
  const stop = stopSdk;
  stopSdk = undefined;
  on = false;
  await stop?.();
}

const tracer = () => trace.getTracer('flashpay');

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The parent; default the active context. ROOT_CONTEXT starts a trace of its own. */
  parent?: Context;
}

/**
 * Runs `fn` in a new span (active for everything `fn` awaits) when tracing is on; otherwise just
 * runs it. A throw marks the span as an error and is rethrown unchanged.
 */
export function withSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!on) return fn(undefined);
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    {
      ...(options.kind !== undefined ? { kind: options.kind } : {}),
      ...(options.attributes ? { attributes: options.attributes } : {}),
      ...(options.links ? { links: options.links } : {}),
    },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error | null)?.message ?? String(error) });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** A span that the caller ends (a request's server span, which outlives any one function). */
export function startSpan(name: string, options: SpanOptions): Span {
  return tracer().startSpan(
    name,
    {
      ...(options.kind !== undefined ? { kind: options.kind } : {}),
      ...(options.attributes ? { attributes: options.attributes } : {}),
      ...(options.links ? { links: options.links } : {}),
    },
    options.parent ?? context.active(),
  );
}

export function markError(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** `traceparent` is W3C's version 00 form; anything else is not ours to format into a statement. */
export function isTraceparent(value: unknown): value is string {
  return typeof value === 'string' && TRACEPARENT.test(value);
}

/** The W3C `traceparent` of the active span, or undefined when there is none (or tracing is off). */
export function activeTraceparent(): string | undefined {
  if (!on) return undefined;
  const span = trace.getSpanContext(context.active());
  if (!span || !trace.isSpanContextValid(span)) return undefined;
  return `00-${span.traceId}-${span.spanId}-0${(span.traceFlags & 1).toString(16)}`;
}

/** The context a stored `traceparent` names (a remote parent), or the root when it names none. */
export function contextOf(traceparent: string | null | undefined): Context {
  if (!on || !isTraceparent(traceparent)) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

/** The span context a stored `traceparent` names, for a link. */
export function spanContextOf(traceparent: string | null | undefined): SpanContext | undefined {
  return trace.getSpanContext(contextOf(traceparent));
}

/** Adds the active context's `traceparent` (and `tracestate`) to outgoing headers. */
export function injectTraceHeaders(headers: Record<string, string | number>): void {
  propagation.inject(context.active(), headers, {
    set: (carrier, key, value) => {
      carrier[key] = value;
    },
  });
}

/** The context incoming headers carry (W3C trace context), under `base` (default the root). */
export function extractTraceHeaders(headers: Record<string, unknown>, base: Context = ROOT_CONTEXT): Context {
  return propagation.extract(base, headers, {
    keys: (carrier) => Object.keys(carrier),
    get: (carrier, key) => {
      const value = carrier[key];
      return typeof value === 'string' ? value : Array.isArray(value) ? (value[0] as string | undefined) : undefined;
    },
  });
}

/** The active span's context, to link to later (a group commit's members). */
export function activeSpanContext(): SpanContext | undefined {
  if (!on) return undefined;
  const span = trace.getSpanContext(context.active());
  return span && trace.isSpanContextValid(span) ? span : undefined;
}

export function activeSpan(): Span | undefined {
  return on ? trace.getSpan(context.active()) : undefined;
}

/** Runs `fn` with `ctx` active. */
export function within<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

export function withSpanIn(ctx: Context, span: Span): Context {
  return trace.setSpan(ctx, span);
}

/** Binds an emitter's listeners to `ctx` (a request's body is read in the socket's context otherwise). */
export function bindEmitter<E extends NodeJS.EventEmitter>(ctx: Context, emitter: E): E {
  return context.bind(ctx, emitter);
}

/** trace_id and span_id of the active span for a log line; nothing when there is none. */
export function logTraceIds(): Record<string, string> {
  const span = activeSpanContext();
  return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
}

/**
 * Runs `fn` as a trace of its own (a recovery pass, a reconciliation run), linked to the span that
 * started it, if any (a request, a timer's pass); just runs it while tracing is off.
 */
export function withRootSpan<T>(name: string, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!on) return fn(undefined);
  const caller = activeSpanContext();
  return withSpan(name, { parent: ROOT_CONTEXT, ...(caller ? { links: [{ context: caller }] } : {}) }, fn);
}
