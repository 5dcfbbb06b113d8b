// One call's answer as a Result (or thrown as a FlashpayError), with what the caller may need to
// retry it safely: the key it was sent with, whether the answer is a replay, how many attempts.
import { FlashpayError, problemOf, type Problem } from './problems.js';
import { attemptsOf } from './retry.js';

export interface CallMeta {
  status: number;
  /** The key the call was sent with (generated when none was given); reuse it to retry later. */
  idempotencyKey?: string | undefined;
  /** `Idempotent-Replayed` of a keyed answer. */
  replayed?: boolean | undefined;
  location?: string | undefined;
  /** How many times the request was sent. */
  attempts: number;
}

export type Result<T> = (
  { ok: true; data: T; problem?: undefined } | { ok: false; data?: undefined; problem: Problem }
) &
  CallMeta;

export interface KeyedCall {
  /** Sent as Idempotency-Key; a fresh UUID when omitted. Reuse a key to retry a call later, safely. */
  idempotencyKey?: string | undefined;
}

/** An operator's action: the reason is required (1..500 characters) and kept in the audit trail. */
export interface ReasonedCall extends KeyedCall {
  reason: string;
}

export function newKey(): string {
  return globalThis.crypto.randomUUID();
}

function meta(response: Response, idempotencyKey?: string): CallMeta {
  const replayed = response.headers.get('idempotent-replayed');
  const location = response.headers.get('location');
  return {
    status: response.status,
    attempts: attemptsOf(response),
    ...(idempotencyKey ? { idempotencyKey } : {}),
    ...(replayed !== null ? { replayed: replayed === 'true' } : {}),
    ...(location ? { location } : {}),
  };
}

export function toResult<T>(
  outcome: { data?: unknown; error?: unknown; response: Response },
  idempotencyKey?: string,
): Result<T> {
  if (outcome.response.ok) return { ok: true, data: outcome.data as T, ...meta(outcome.response, idempotencyKey) };
  const problem = problemOf(outcome.response.status, outcome.error);
  return { ok: false, problem, ...meta(outcome.response, idempotencyKey) };
}

export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.data;
  throw new FlashpayError(result.problem, result.idempotencyKey);
}
