import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from './errors.ts';

export interface RateLimitOptions {
  /** Requests per minute per principal per route; 0 turns limiting off. */
  perMinute: number;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  atMs: number;
}

// A caller without a token (the provider's notifications, the relay's deliveries, probes) is known
// only by its address, and one address may carry a whole provider's traffic: it gets this many
// times the limit of one principal.
const ADDRESS_FACTOR = 10;

// Buckets are in memory, per process: several `flashpay start` processes behind one address each
// allow the limit (docs/security.md). Bounded so a flood of distinct callers cannot grow it.
const MAX_BUCKETS = 50_000;

/**
 * A token bucket per (principal, route): `perMinute` tokens, refilled continuously, so a burst of
 * up to the limit passes and a steady rate above it gets 429 RATE_LIMITED with `Retry-After`.
 * Keyed by the verified principal (tenant/user) where the route authenticates, by the client
 * address otherwise (the provider's notifications, health checks). Runs as a preValidation hook:
 * after authentication, before the body is validated or anything executes. Callback style, not
 * async: no promise per request; a throw is caught by Fastify's hook runner like a rejection.
 */
export function rateLimiter(options: RateLimitOptions) {
  const buckets = new Map<string, Bucket>();
  const now = options.now ?? Date.now;
  return (request: FastifyRequest, _reply: FastifyReply, done: () => void): void => {
    if (options.perMinute <= 0) return done();
    const limit = request.principal ? options.perMinute : options.perMinute * ADDRESS_FACTOR;
    const refillPerMs = limit / 60_000;
    const who = request.principal ? `p:${request.principal.tenantId}/${request.principal.userId}` : `ip:${request.ip}`;
    const key = `${who} ${request.method} ${request.routeOptions.url ?? 'unmatched'}`;
    const at = now();
    let bucket = buckets.get(key);
    if (!bucket) {
      if (buckets.size >= MAX_BUCKETS) buckets.clear();
      bucket = { tokens: limit, atMs: at };
      buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(limit, bucket.tokens + (at - bucket.atMs) * refillPerMs);
    bucket.atMs = at;
    if (bucket.tokens < 1) {
      const retryAfterS = Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000));
      throw new AppError(
        'RATE_LIMITED',
        `more than ${limit} requests per minute on this route; retry in ${retryAfterS} s`,
        { limit },
        { 'Retry-After': String(retryAfterS) },
      );
    }
    bucket.tokens -= 1;
    done();
  };
}

export interface FailedAuthOptions {
  /** 401 answers per minute per client address; 0 turns the limit off. */
  perMinute: number;
  now?: () => number;
}

/**
 * Bounds the 401s one client address can collect (issue 38): a token bucket of `perMinute` per
 * address, spent by each refused credential. Once it is empty, a request from that address that
 * would be refused again gets 429 RATE_LIMITED with `Retry-After` instead: guessing tokens is slowed
 * to the limit, while a caller with a valid token from the same address (a NAT, a proxy) is never
 * refused by it. The address is `request.ip`, which believes X-Forwarded-For only from
 * FLASHPAY_TRUSTED_PROXIES (Fastify's trustProxy): a forged header from anyone else changes nothing.
 * Answers the error to send in place of the 401, or undefined to send the 401.
 */
export function failedAuthLimiter(options: FailedAuthOptions): (address: string) => AppError | undefined {
  const buckets = new Map<string, Bucket>();
  const now = options.now ?? Date.now;
  const limit = options.perMinute;
  const refillPerMs = limit / 60_000;
  return (address) => {
    if (limit <= 0) return undefined;
    const at = now();
    let bucket = buckets.get(address);
    if (!bucket) {
      if (buckets.size >= MAX_BUCKETS) buckets.clear();
      bucket = { tokens: limit, atMs: at };
      buckets.set(address, bucket);
    }
    bucket.tokens = Math.min(limit, bucket.tokens + (at - bucket.atMs) * refillPerMs);
    bucket.atMs = at;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    const retryAfterS = Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000));
    return new AppError(
      'RATE_LIMITED',
      `more than ${limit} failed authentications per minute from this address; retry in ${retryAfterS} s`,
      { limit },
      { 'Retry-After': String(retryAfterS) },
    );
  };
}
