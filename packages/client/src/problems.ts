// The closed set of `code`s a flashpay problem+json answer can carry. Branch on `code`, never on
// `title` or `detail`. Kept equal to the server's list by tests/client/package.test.ts (PK-02).
export const PROBLEM_CODES = [
  'VALIDATION',
  'AMOUNT_TOO_LARGE',
  'IDEMPOTENCY_KEY_MISSING',
  'IDEMPOTENCY_KEY_INVALID',
  'BAD_SIGNATURE',
  'PAYLOAD_TOO_LARGE',
  'URI_TOO_LONG',
  'HEADERS_TOO_LARGE',
  'REQUEST_TIMEOUT',
  'RATE_LIMITED',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'PROVIDER_NOT_CONFIGURED',
  'ORDER_NOT_FOUND',
  'SKU_NOT_FOUND',
  'SKU_EXISTS',
  'SKU_OWNED_BY_STOCK_SERVICE',
  'SOLD_OUT',
  'USER_LIMIT',
  'REJECTED',
  'INSUFFICIENT_FUNDS',
  'REQUEST_IN_PROGRESS',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR',
  'UNAVAILABLE',
  'INTERNAL',
] as const;

/** Every `code` a problem+json answer can carry. */
export type ProblemCode = (typeof PROBLEM_CODES)[number];

/**
 * Codes the client itself gives, never the server: `NETWORK` when no answer came (refused, reset,
 * DNS, TLS, an aborted request), after the retries a request allows. Whether a keyed create or
 * pay was executed is then unknown: retry it with the same `idempotencyKey` to learn it.
 */
export const CLIENT_ERROR_CODES = ['NETWORK'] as const;
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];
/** What `FlashpayError.code` can be. */
export type ErrorCode = ProblemCode | ClientErrorCode;

/** An RFC 9457 problem as flashpay sends it; extra members (e.g. `order_status`) may follow. */
export interface Problem<C extends ErrorCode = ProblemCode> {
  type: string;
  title: string;
  status: number;
  code: C;
  detail: string;
  [extra: string]: unknown;
}

export function isProblemCode(value: unknown): value is ProblemCode {
  return typeof value === 'string' && (PROBLEM_CODES as readonly string[]).includes(value);
}

/**
 * A refusal from the API, thrown by `createClient`'s calls, or `NETWORK` when no answer came.
 * `code` is the problem's stable code; `idempotencyKey` is the key the call was sent with:
 * retrying with it can never act twice. `status` is 0 for `NETWORK`.
 */
export class FlashpayError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'FlashpayError';
  readonly code: C;
  readonly status: number;
  readonly problem: Problem<C>;
  readonly idempotencyKey: string | undefined;

  constructor(problem: Problem<C>, idempotencyKey?: string, options?: { cause?: unknown }) {
    super(`${problem.code}: ${problem.detail}`, options);
    this.code = problem.code;
    this.status = problem.status;
    this.problem = problem;
    this.idempotencyKey = idempotencyKey;
  }

  /** `error.is('SOLD_OUT')` narrows `error.code` (and works on anything caught). */
  is<K extends ErrorCode>(code: K): this is FlashpayError<K> {
    return (this.code as ErrorCode) === code;
  }
}

/** The error for a request that got no answer; `cause` is what fetch threw. */
export function networkError(request: Request, cause: unknown, attempts: number): FlashpayError<'NETWORK'> {
  const reason =
    cause instanceof Error ? ((cause.cause as Error | undefined)?.message ?? cause.message) : String(cause);
  const tries = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
  return new FlashpayError(
    {
      type: 'about:blank',
      title: 'No answer from the server',
      status: 0,
      code: 'NETWORK',
      detail: `${request.method} ${request.url}: ${reason} (${tries})`,
    },
    request.headers.get('idempotency-key') ?? undefined,
    { cause },
  );
}

/** True when `error` is a FlashpayError, with one of `codes` when given. */
export function isFlashpayError<K extends ErrorCode = ErrorCode>(
  error: unknown,
  ...codes: K[]
): error is FlashpayError<K> {
  return error instanceof FlashpayError && (codes.length === 0 || (codes as string[]).includes(error.code));
}

/** What a non-problem answer (a proxy's HTML page, an empty 502) is read as. */
export function problemOf(status: number, body: unknown): Problem {
  const given = body as Partial<Problem> | undefined;
  if (given && isProblemCode(given.code)) return given as Problem;
  const code: ProblemCode = status === 503 || status === 502 || status === 504 ? 'UNAVAILABLE' : 'INTERNAL';
  return {
    type: 'about:blank',
    title: 'Unexpected answer',
    status,
    code,
    detail: `HTTP ${status} without a flashpay problem body`,
  };
}
