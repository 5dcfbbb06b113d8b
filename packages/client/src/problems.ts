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

/** An RFC 9457 problem as flashpay sends it; extra members (e.g. `order_status`) may follow. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  [extra: string]: unknown;
}

export function isProblemCode(value: unknown): value is ProblemCode {
  return typeof value === 'string' && (PROBLEM_CODES as readonly string[]).includes(value);
}

/**
 * A refusal from the API, thrown by `createClient`'s calls. `code` is the problem's stable code;
 * `idempotencyKey` is the key the call was sent with: retrying with it can never act twice.
 */
export class FlashpayError<C extends ProblemCode = ProblemCode> extends Error {
  override readonly name = 'FlashpayError';
  readonly code: C;
  readonly status: number;
  readonly problem: Problem & { code: C };
  readonly idempotencyKey: string | undefined;

  constructor(problem: Problem & { code: C }, idempotencyKey?: string) {
    super(`${problem.code}: ${problem.detail}`);
    this.code = problem.code;
    this.status = problem.status;
    this.problem = problem;
    this.idempotencyKey = idempotencyKey;
  }

  /** `error.is('SOLD_OUT')` narrows `error.code` (and works on anything caught). */
  is<K extends ProblemCode>(code: K): this is FlashpayError<K> {
    return (this.code as ProblemCode) === code;
  }
}

/** True when `error` is a FlashpayError, with one of `codes` when given. */
export function isFlashpayError<K extends ProblemCode = ProblemCode>(
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
