import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, problem, type ErrorCode } from '../platform/errors.ts';
import { isValidKey } from './digest.ts';
import type { StoredResponse } from './idempotency.repo.ts';
import type { KeyedResult } from './idempotency.types.ts';

/**
 * Validates the key header. From here on every answer of the route is a keyed response, refusals
 * of the key included (422 reused, 409 in progress), so it says it is not a replay unless
 * sendKeyed later says otherwise.
 */
export function idempotencyKeyOf(request: FastifyRequest, reply: FastifyReply): string {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined || raw === '')
    throw new AppError('IDEMPOTENCY_KEY_MISSING', 'the Idempotency-Key header is required on this route');
  if (typeof raw !== 'string' || !isValidKey(raw))
    throw new AppError('IDEMPOTENCY_KEY_INVALID', 'Idempotency-Key must be 1..255 visible ASCII characters');
  reply.header('Idempotent-Replayed', 'false');
  return raw;
}

export function jsonResponse(status: number, body: unknown, location?: string): StoredResponse {
  return { status, body: JSON.stringify(body), ...(location ? { location } : {}) };
}

export function problemResponse(code: ErrorCode, detail: string, extra: Record<string, unknown> = {}): StoredResponse {
  const body = problem(code, detail, extra);
  return { status: body.status, body: JSON.stringify(body) };
}

/** Sends a keyed response exactly as stored, marking whether it is a replay. */
export function sendKeyed(reply: FastifyReply, result: KeyedResult): FastifyReply {
  reply.code(result.status).header('Idempotent-Replayed', String(result.replayed));
  if (result.location) reply.header('Location', result.location);
  reply.type(result.status >= 400 ? 'application/problem+json' : 'application/json; charset=utf-8');
  return reply.send(result.body);
}
