// The closed set of error codes a client can see. Each maps to one HTTP status here and
// nowhere else; docs/errors.md lists every one (tests/platform/errors.test.ts checks that).
export const ERROR_STATUS = {
  VALIDATION: 400,
  AMOUNT_TOO_LARGE: 400,
  IDEMPOTENCY_KEY_MISSING: 400,
  IDEMPOTENCY_KEY_INVALID: 400,
  BAD_SIGNATURE: 400,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  RATE_LIMITED: 429,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  PROVIDER_NOT_CONFIGURED: 404,
  ORDER_NOT_FOUND: 404,
  SKU_NOT_FOUND: 404,
  SKU_EXISTS: 409,
  SKU_OWNED_BY_STOCK_SERVICE: 409,
  SOLD_OUT: 409,
  USER_LIMIT: 409,
  REJECTED: 409,
  INSUFFICIENT_FUNDS: 409,
  REQUEST_IN_PROGRESS: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR: 409,
  UNAVAILABLE: 503,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

const TITLES: Record<ErrorCode, string> = {
  VALIDATION: 'The request is not valid',
  AMOUNT_TOO_LARGE: 'The order total is more than the payment provider accepts',
  IDEMPOTENCY_KEY_MISSING: 'Idempotency-Key header is required',
  IDEMPOTENCY_KEY_INVALID: 'Idempotency-Key header is malformed',
  BAD_SIGNATURE: 'Notification signature is not valid',
  PAYLOAD_TOO_LARGE: 'Request body is too large',
  URI_TOO_LONG: 'A path parameter is too long',
  HEADERS_TOO_LARGE: 'Request headers are too large',
  REQUEST_TIMEOUT: 'The request took too long to arrive',
  RATE_LIMITED: 'Too many requests',
  UNAUTHENTICATED: 'Authentication required',
  FORBIDDEN: 'Not allowed for this principal',
  NOT_FOUND: 'Not found',
  PROVIDER_NOT_CONFIGURED: 'No tenant pays through this provider here',
  ORDER_NOT_FOUND: 'Order not found',
  SKU_NOT_FOUND: 'SKU not found',
  SKU_EXISTS: 'SKU already exists',
  SKU_OWNED_BY_STOCK_SERVICE: 'SKUs are written on the stock service',
  SOLD_OUT: 'Sold out',
  USER_LIMIT: 'Per-user limit reached',
  REJECTED: 'Not allowed in the current state',
  INSUFFICIENT_FUNDS: 'The wallet balance is too low',
  REQUEST_IN_PROGRESS: 'A request with this key is still in progress',
  IDEMPOTENCY_KEY_REUSED: 'Idempotency-Key was used with a different request',
  IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR: 'Idempotency-Key names an action another operator made',
  UNAVAILABLE: 'Service temporarily unavailable',
  INTERNAL: 'Internal error',
};

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  [extra: string]: unknown;
}

/** A client-visible failure: always rendered as RFC 9457 problem+json with a stable code. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(detail);
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.extra = extra;
    this.headers = headers;
  }

  toProblem(): Problem {
    return problem(this.code, this.message, this.extra);
  }
}

export function problem(code: ErrorCode, detail: string, extra: Record<string, unknown> = {}): Problem {
  // Extra members never shadow the RFC 9457 ones: `status` is always the HTTP status code.
  return {
    ...extra,
    type: `https://flashpay.dev/errors/${code.toLowerCase().replace(/_/g, '-')}`,
    title: TITLES[code],
    status: ERROR_STATUS[code],
    code,
    detail,
  };
}

/** A broken invariant: a bug, never a business outcome. */
export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`invariant violated: ${message}`);
}
