// Retries only what cannot do harm; every retry sends the same request, Idempotency-Key included.
import { networkError } from './problems.js';

// Every optional member also takes `undefined`, so options built from `process.env` compile under
// `exactOptionalPropertyTypes` (tsc --init's default).
export interface RetryOptions {
  /** Attempts per call, the first included (default 4). */
  maxAttempts?: number | undefined;
  /** Longest wait honoured from a Retry-After, in ms (default 5000). */
  maxRetryAfterMs?: number | undefined;
  /** Backoff base for network errors, in ms (default 100, doubling). */
  backoffMs?: number | undefined;
  /** The fetch to send with (default: the global one). */
  fetch?: typeof fetch | undefined;
}

const ATTEMPTS = Symbol('attempts');
type Counted = Response & { [ATTEMPTS]?: number };

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function isKeyed(request: Request): boolean {
  return request.headers.has('idempotency-key');
}

function retryAfterMs(response: Response, max: number): number | undefined {
  const header = response.headers.get('retry-after');
  if (header === null) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Math.min(Math.max(0, ms), max);
}

/** How many times the request behind `response` was sent. */
export function attemptsOf(response: Response): number {
  return (response as Counted)[ATTEMPTS] ?? 1;
}

/**
 * Retries a 503 or 429 that says when to come back (nothing was executed), a 409
 * REQUEST_IN_PROGRESS of a keyed request (the first is still running; the key makes the retry a
 * replay), and network errors of keyed or GET requests. A request that got no answer in the end
 * throws `FlashpayError` with code `NETWORK` (never fetch's bare `TypeError: fetch failed`).
 */
export function retryingFetch(options: RetryOptions = {}) {
  const send = options.fetch ?? ((input: Request) => fetch(input));
  const maxAttempts = options.maxAttempts ?? 4;
  const maxWait = options.maxRetryAfterMs ?? 5000;
  const backoff = options.backoffMs ?? 100;
  return async (input: Request): Promise<Response> => {
    const replayable = isKeyed(input) || input.method === 'GET' || input.method === 'HEAD';
    for (let attempt = 1; ; attempt++) {
      let response: Counted;
      try {
        response = await send(input.clone());
      } catch (error) {
        if (!replayable || attempt >= maxAttempts) throw networkError(input, error, attempt);
        await delay(backoff * 2 ** (attempt - 1));
        continue;
      }
      response[ATTEMPTS] = attempt;
      if (attempt >= maxAttempts) return response;
      const wait = retryAfterMs(response, maxWait);
      const retriable =
        response.status === 503 || response.status === 429 || (response.status === 409 && isKeyed(input));
      if (!retriable || wait === undefined) return response;
      if (response.status === 409) {
        const body = (await response
          .clone()
          .json()
          .catch(() => ({}))) as { code?: string };
        if (body.code !== 'REQUEST_IN_PROGRESS') return response;
      }
      await response.body?.cancel();
      await delay(wait);
    }
  };
}
