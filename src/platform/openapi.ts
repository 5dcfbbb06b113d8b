import type { FastifyInstance } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import { ERROR_STATUS, problem, type ErrorCode } from './errors.ts';

// One definition per wire shape: Fastify validates requests and serializes responses from these
// schemas, @fastify/swagger renders them into /docs/json, and handlers take their types from them.

declare module 'fastify' {
  interface FastifySchema {
    /** Documented but not enforced by Fastify: the handler checks it (e.g. Idempotency-Key). */
    docHeaders?: TSchema;
    /** Documented but validated by the handler after the signature check. */
    docBody?: TSchema;
    /** The body may be omitted entirely (Fastify's schema alone cannot say so to @fastify/swagger). */
    'x-body-optional'?: boolean;
  }
}

/** A string enum with the `type` every generator wants, typed as the union of its values. */
export function stringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

export function nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  return Type.Union([schema, Type.Null()], options);
}

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** RFC 9457 problem details; extra members (e.g. `order_status`) may follow, so they are allowed. */
export function problemSchema(codes: readonly ErrorCode[] = ERROR_CODES) {
  return Type.Object(
    {
      type: Type.String({ description: 'a URI naming the problem type' }),
      title: Type.String(),
      status: Type.Integer({ description: 'the HTTP status code' }),
      code: stringEnum(codes, { description: 'the stable machine word: branch on this' }),
      detail: Type.String({ description: 'what went wrong this time, for a person' }),
      ...(codes.includes('UNAVAILABLE')
        ? {
            outcome: Type.Optional(
              stringEnum(['unknown'] as const, {
                description:
                  '`unknown` when the database connection was lost while committing: the request may have been executed; retry with the same Idempotency-Key to learn its outcome. Absent: nothing was executed',
              }),
            ),
          }
        : {}),
    },
    { additionalProperties: true },
  );
}

export const ProblemSchema = problemSchema();
export type ProblemBody = Static<typeof ProblemSchema>;

export function problemExample(code: ErrorCode, detail: string, extra: Record<string, unknown> = {}) {
  return problem(code, detail, extra);
}

interface HeaderDoc {
  description: string;
  type: 'string' | 'integer';
  enum?: string[];
  example?: string;
}

export const HEADERS = {
  replayed: {
    description:
      '`true` when this is the stored answer of an earlier request with the same Idempotency-Key, `false` when it was executed now. Present on every answer once the key was accepted.',
    type: 'string',
    enum: ['true', 'false'],
  },
  location: { description: 'where the created resource can be read', type: 'string', example: '/v1/orders/ord_01J9Z' },
  retryAfter: {
    description: 'seconds to wait before retrying (the same Idempotency-Key is safe to reuse)',
    type: 'string',
    example: '1',
  },
  wwwAuthenticate: {
    description: 'the bearer challenge (RFC 6750)',
    type: 'string',
    example: 'Bearer error="invalid_token"',
  },
  preferenceApplied: {
    description: 'RFC 7240: `respond-async` when the order was recorded and queued (202) rather than reserved now',
    type: 'string',
    enum: ['respond-async'],
  },
} as const satisfies Record<string, HeaderDoc>;

export type Headers = Record<string, HeaderDoc>;

interface ResponseOptions {
  headers?: Headers;
  example?: unknown;
}

/** A JSON answer: the schema Fastify serializes with, and what the document shows. */
export function jsonAnswer(description: string, schema: TSchema, options: ResponseOptions = {}) {
  const withExample = options.example === undefined ? schema : { ...schema, examples: [options.example] };
  return {
    description,
    ...(options.headers ? { headers: options.headers } : {}),
    content: { 'application/json': { schema: withExample } },
  };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'The request is not valid (nothing was executed)',
  401: 'No valid bearer token',
  403: 'The token is valid but not allowed here',
  404: 'Not found (or not visible to this principal)',
  409: 'Refused in the current state',
  413: 'The body is larger than the limit',
  414: 'A path parameter is longer than the limit',
  429: 'Too many requests on this route: retry after Retry-After',
  422: 'The Idempotency-Key was used with another request',
  500: 'An unexpected failure (retry with the same Idempotency-Key)',
  503: 'Temporarily unavailable: nothing was executed (unless `outcome` is `unknown`), retry after Retry-After',
};

const EXAMPLE_DETAIL: Partial<Record<ErrorCode, string>> = {
  VALIDATION: 'body.quantity must be >= 1',
  IDEMPOTENCY_KEY_MISSING: 'the Idempotency-Key header is required on this route',
  IDEMPOTENCY_KEY_INVALID: 'Idempotency-Key must be 1..255 visible ASCII characters',
  BAD_SIGNATURE: 'signature does not match',
  UNAUTHENTICATED: 'a bearer token is required',
  FORBIDDEN: 'this route needs an admin token',
  SOLD_OUT: 'no stock left for tee-black-m',
  REQUEST_IN_PROGRESS: 'a request with this Idempotency-Key is still being processed; retry later',
  UNAVAILABLE: 'the database is unreachable; nothing was executed',
};

/**
 * The problem+json answers of a route, one per status, each listing exactly the codes the route can
 * give with it. Every route can be rate limited (429) and fail with 500 and 503 (the database), so
 * those are always added.
 */
export function problemAnswers(codes: readonly ErrorCode[], headers: Headers = {}) {
  const all = [...new Set<ErrorCode>([...codes, 'RATE_LIMITED', 'INTERNAL', 'UNAVAILABLE'])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of all) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const out: Record<number, unknown> = {};
  for (const [status, list] of byStatus) {
    const first = list[0] as ErrorCode;
    const schema = {
      ...problemSchema(list),
      examples: [problemExample(first, EXAMPLE_DETAIL[first] ?? STATUS_TEXT[status] ?? first)],
    };
    const extra: Headers = {};
    if (status === 401) extra['WWW-Authenticate'] = HEADERS.wwwAuthenticate;
    if (status === 503 || status === 429 || list.includes('REQUEST_IN_PROGRESS'))
      extra['Retry-After'] = HEADERS.retryAfter;
    const all = { ...headers, ...extra };
    out[status] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}: ${list.map((c) => `\`${c}\``).join(', ')}`,
      ...(Object.keys(all).length ? { headers: all } : {}),
      content: { 'application/problem+json': { schema } },
    };
  }
  return out;
}

/**
 * The same answers as a raw OpenAPI Responses Object (for `webhooks`, which @fastify/swagger does not
 * convert): header schemas move under `schema`, as the Header Object wants them.
 */
export function openapiResponses(responses: Record<number, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(responses)) {
    const { headers, ...rest } = answer as { headers?: Headers };
    const converted = headers
      ? Object.fromEntries(
          Object.entries(headers).map(([name, { description, ...schema }]) => [name, { description, schema }]),
        )
      : undefined;
    out[status] = { ...rest, ...(converted ? { headers: converted } : {}) };
  }
  return out;
}

/** Codes every bearer route can answer with. */
export const BUYER_AUTH: ErrorCode[] = ['UNAUTHENTICATED'];
export const ADMIN_AUTH: ErrorCode[] = ['UNAUTHENTICATED', 'FORBIDDEN'];
/** Codes every route with a path parameter can answer with. */
export const PARAM_ERRORS: ErrorCode[] = ['VALIDATION', 'URI_TOO_LONG'];
/** Codes every route with a JSON body can answer with. */
export const BODY_ERRORS: ErrorCode[] = ['VALIDATION', 'PAYLOAD_TOO_LARGE'];

export const IDEMPOTENCY_KEY_HEADER = Type.Object({
  'idempotency-key': Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[\\x21-\\x7e]+$',
    description:
      'Makes the request safe to retry: 1..255 visible ASCII characters, scoped to (tenant, user, operation). The same key with the same request replays the first answer byte for byte (`Idempotent-Replayed: true`); with another request: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still running: waits, then 409 `REQUEST_IN_PROGRESS` with `Retry-After`. Validation errors (400), authentication errors and 5xx are not stored: retry with the same key. Keys are kept at least 24 h.',
    examples: ['2f1c9a7e-4b1d-4a53-9d0e-6f2f1b0c8e11'],
  }),
});

export const SIGNATURE_DESCRIPTION =
  '`Flashpay-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, the secret being `FLASHPAY_NOTIFY_SECRET` for the provider’s payment notifications and `FLASHPAY_EVENTS_SECRET` for the relay’s order events. The receiver recomputes the MAC over the exact bytes received and refuses a `t` more than 300 s from its clock (400 `BAD_SIGNATURE`, nothing recorded). `constructEvent` and `verifySignature` in `@flashpay/client` do this.';

/**
 * Compile-time guard that a response schema says exactly what a handler returns: responses are
 * serialized from the schema, so a field added to the handler's type but not to the schema would be
 * dropped silently. `const _: SameShape<Static<typeof Schema>, HandlerType> = true;`
 */
export type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Looser guard where the schema is wider than the handler's type (a string for a union): every
 * top-level field the handler returns is declared, and what it returns fits the schema. */
export type Covers<Schema, Handler> = [Exclude<keyof Handler, keyof Schema>] extends [never]
  ? [Handler] extends [Schema]
    ? true
    : false
  : false;

/** Where the document says the API is when the process does not listen (built for linters and generators). */
export const DEFAULT_SERVER = { url: 'http://127.0.0.1:8080', description: '`flashpay start` on this machine' };

/** The address `app` really listens on, as a URL a client on this machine can call. */
export function listenUrl(app: FastifyInstance): string | undefined {
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) return undefined;
  const wildcard = address.address === '0.0.0.0' || address.address === '::';
  const host = wildcard ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * The served document's `servers` follow the process: FLASHPAY_PUBLIC_URL first when set, then the
 * address it really listens on (its real --port, also 0), read at each request of /docs/json.
 * The document is built once (and cached by @fastify/swagger); `servers` stays a live getter on it.
 */
export function followServedAddress(app: FastifyInstance, publicUrl: string | undefined): void {
  app.addHook('onReady', async () => {
    const document = app.swagger() as unknown as Record<string, unknown>;
    Object.defineProperty(document, 'servers', {
      enumerable: true,
      configurable: true,
      get() {
        const listening = listenUrl(app);
        const servers = [];
        if (publicUrl) servers.push({ url: publicUrl, description: 'FLASHPAY_PUBLIC_URL' });
        if (listening && listening !== publicUrl) servers.push({ url: listening, description: 'this process' });
        return servers.length > 0 ? servers : [DEFAULT_SERVER];
      },
    });
  });
}
