import { Type, type TSchema } from 'typebox';
import { HEADERS, jsonAnswer, problemExample, stringEnum } from '../platform/openapi.ts';

// The building blocks of the provider double's OpenAPI document (channel.openapi.ts and
// channel.openapi.control.ts): the examples' merchant order, its problem answers by code, and the
// shape of a control operation.

export const MO = 'ord_7c1e2b9f4a';
export const AT = '2026-11-30T18:00:00.000Z';

const CODES = {
  VALIDATION: 400,
  UNAUTHENTICATED: 401,
  NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
  CLOSED: 409,
  NOT_CHARGED: 409,
  ALREADY_REFUNDED: 409,
  AMOUNT_MISMATCH: 422,
  REFUND_KEY_REUSED: 422,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;
export type Code = keyof typeof CODES;

const TEXT: Record<number, string> = {
  400: 'Not valid; nothing happened',
  401: 'The control API needs `Authorization: Bearer <FLASHPAY_CONTROL_TOKEN>` (when the double was started with one)',
  404: 'Not found',
  409: 'Refused in the charge’s current state',
  413: 'Body too large',
  422: 'Conflicts with what the ledger holds',
  500: 'An injected ERROR_500 fault, or a failure; the ledger is untouched',
  503: 'The ledger’s database is unreachable or overloaded: nothing happened, unless `outcome` is `unknown` (the connection was lost while committing); retry after Retry-After',
};

export function problems(codes: Code[], bodyRoute = true) {
  const edge: Code[] = bodyRoute ? ['VALIDATION', 'PAYLOAD_TOO_LARGE'] : ['VALIDATION'];
  const all: Code[] = [...new Set<Code>([...edge, ...codes, 'INTERNAL', 'UNAVAILABLE'])];
  const out: Record<number, unknown> = {};
  for (const status of [...new Set(all.map((c) => CODES[c]))]) {
    const list = all.filter((c) => CODES[c] === status);
    const schema = Type.Object(
      {
        type: Type.String(),
        title: Type.String(),
        status: Type.Integer(),
        code: stringEnum(list),
        detail: Type.String(),
      },
      {
        additionalProperties: true,
        examples: [{ ...problemExample('VALIDATION', TEXT[status] ?? ''), code: list[0], status }],
      },
    );
    const headers =
      status === 401
        ? { headers: { 'WWW-Authenticate': HEADERS.wwwAuthenticate } }
        : status === 503
          ? { headers: { 'Retry-After': HEADERS.retryAfter } }
          : {};
    out[status] = {
      description: `${TEXT[status] ?? 'Error'}: ${list.map((c) => `\`${c}\``).join(', ')}`,
      ...headers,
      content: { 'application/problem+json': { schema } },
    };
  }
  return out;
}

export const withExample = (schema: object, example: unknown) => ({ ...schema, examples: [example] });

export function control(
  operationId: string,
  summary: string,
  answer: TSchema,
  example: unknown,
  body?: object,
  bodyExample?: unknown,
  extra: Code[] = [],
) {
  return {
    operationId,
    summary,
    description: `${summary}. Only with \`--control\`.`,
    tags: ['control'],
    security: [],
    ...(body ? { body: withExample(body, bodyExample) } : {}),
    response: {
      200: jsonAnswer(summary, answer, { example }),
      ...problems(['UNAUTHENTICATED', ...extra], body !== undefined),
    },
  };
}
