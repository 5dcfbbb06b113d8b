// Receiving flashpay's signed POSTs: the relay's order events (signed with FLASHPAY_EVENTS_SECRET)
// and, for a provider adapter, payment notifications (FLASHPAY_NOTIFY_SECRET). The scheme:
// `Flashpay-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
import { equalConstantTime, hmacSha256, toHex } from './hmac.js';
import type { OrderEvent } from './types.js';

/** The header, lower-cased as Node and fetch give it. */
export const SIGNATURE_HEADER = 'flashpay-signature';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export const WEBHOOK_ERROR_REASONS = [
  'SIGNATURE_MISSING',
  'SIGNATURE_MALFORMED',
  'TIMESTAMP_OUT_OF_TOLERANCE',
  'SIGNATURE_MISMATCH',
  'BODY_NOT_AN_EVENT',
  'BODY_NOT_RAW',
] as const;
export type WebhookErrorReason = (typeof WEBHOOK_ERROR_REASONS)[number];

/** `code` is always `BAD_SIGNATURE` (what flashpay answers itself); `reason` says which check failed. */
export class WebhookSignatureError extends Error {
  override readonly name = 'WebhookSignatureError';
  readonly code = 'BAD_SIGNATURE' as const;
  constructor(
    readonly reason: WebhookErrorReason,
    message: string,
  ) {
    super(message);
  }
}

export interface VerifyOptions {
  /** How far the signature's `t` may be from now (default 300 s, as flashpay itself accepts). */
  toleranceSeconds?: number | undefined;
  /** "Now", for tests (default: the clock). */
  nowSeconds?: number | undefined;
}

const encoder = new TextEncoder();

/** RFC 2104 / RFC 7518 §3.2: a key shorter than SHA-256's output (32 bytes) weakens the MAC. */
export const MIN_SECRET_BYTES = 32;
/** A rotation has two secrets at a time; more than this many `v1` is not a header flashpay sends. */
export const MAX_SIGNATURES = 8;

function bytesOf(body: string | Uint8Array): Uint8Array {
  return typeof body === 'string' ? encoder.encode(body) : body;
}

/**
 * A secret or tolerance that cannot protect anything is the caller's mistake, not a bad request:
 * it throws a TypeError / RangeError (never a WebhookSignatureError, which verifySignature would
 * turn into a quiet `false` for every webhook), so a receiver misconfigured with an empty
 * FLASHPAY_EVENTS_SECRET fails at its first webhook instead of accepting a MAC anyone can make.
 */
function assertUsable(secret: unknown, tolerance: unknown): asserts secret is string {
  if (typeof secret !== 'string' || secret.length === 0)
    throw new TypeError('the webhook secret is missing or empty (FLASHPAY_EVENTS_SECRET)');
  if (encoder.encode(secret).length < MIN_SECRET_BYTES)
    throw new RangeError(`the webhook secret is shorter than ${MIN_SECRET_BYTES} bytes`);
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0)
    throw new RangeError('toleranceSeconds must be a finite number >= 0');
}

/** The raw body as bytes; anything but a string or bytes (a parsed JSON object) cannot be verified. */
function rawBytesOf(body: unknown): Uint8Array {
  if (typeof body === 'string' || body instanceof Uint8Array) return bytesOf(body);
  throw new WebhookSignatureError(
    'BODY_NOT_RAW',
    'the body must be the raw request body (a string or bytes), before any JSON parsing',
  );
}

/** `t=…,v1=…` for `rawBody` under `secret`: what flashpay sends (for tests and forwarders). */
export function signPayload(secret: string, rawBody: string | Uint8Array, atSeconds = Math.floor(Date.now() / 1000)) {
  const body = bytesOf(rawBody);
  const prefix = encoder.encode(`${atSeconds}.`);
  const message = new Uint8Array(prefix.length + body.length);
  message.set(prefix);
  message.set(body, prefix.length);
  return `t=${atSeconds},v1=${toHex(hmacSha256(encoder.encode(secret), message))}`;
}

/**
 * Throws a WebhookSignatureError unless `header` signs the exact `rawBody` under `secret`, recently.
 * A header may carry several `v1` (a secret being rotated): it passes when any of them matches.
 */
export function assertSignature(
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): void {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  assertUsable(secret, tolerance);
  const body = rawBytesOf(rawBody);
  if (!header) throw new WebhookSignatureError('SIGNATURE_MISSING', 'Flashpay-Signature header is missing');
  const pairs = header.split(',').map((part) => {
    const at = part.indexOf('=');
    return at < 0 ? [part.trim(), ''] : [part.slice(0, at).trim(), part.slice(at + 1).trim()];
  });
  const t = Number(pairs.find(([name]) => name === 't')?.[1]);
  // Unknown schemes and a v1 that is not 64 hex digits are skipped (Stripe's rule); none left is malformed.
  const given = pairs
    .filter(([name, value]) => name === 'v1' && /^[0-9a-f]{64}$/.test(value ?? ''))
    .map(([, v]) => v ?? '');
  if (!Number.isInteger(t) || given.length === 0 || given.length > MAX_SIGNATURES)
    throw new WebhookSignatureError('SIGNATURE_MALFORMED', 'Flashpay-Signature is malformed');
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > tolerance)
    throw new WebhookSignatureError(
      'TIMESTAMP_OUT_OF_TOLERANCE',
      `signature timestamp is more than ${tolerance}s from now`,
    );
  const expected = signPayload(secret, body, t).slice(`t=${t},v1=`.length);
  // Every candidate is compared (no early exit), so the time taken does not say which one matched.
  let matched = false;
  for (const candidate of given) matched = equalConstantTime(expected, candidate) || matched;
  if (!matched) throw new WebhookSignatureError('SIGNATURE_MISMATCH', 'signature does not match the body and secret');
}

/** True when `header` is a valid signature of the exact raw body under `secret`, made within the tolerance. */
export function verifySignature(
  secret: string,
  header: string | null | undefined,
  rawBody: string | Uint8Array,
  options: VerifyOptions = {},
): boolean {
  try {
    assertSignature(rawBody, header, secret, options);
    return true;
  } catch (error) {
    if (error instanceof WebhookSignatureError) return false;
    throw error;
  }
}

const EVENT_FIELDS = ['event_id', 'order_id', 'event_type'] as const;

/**
 * Verifies a webhook from flashpay's relay and answers its event. Pass the body exactly as
 * received (before any JSON parsing), the `Flashpay-Signature` header and the secret the relay
 * signs with (FLASHPAY_EVENTS_SECRET, at least 32 bytes). Throws WebhookSignatureError when the
 * request is off (a body that is not the raw string or bytes included); a TypeError / RangeError
 * when the call is (an empty, missing or short secret, a tolerance that is not a finite number >= 0).
 */
export function constructEvent(
  rawBody: string | Uint8Array,
  // Node types a header it does not know as `string | string[]`: `request.headers[SIGNATURE_HEADER]` as it is.
  signatureHeader: string | readonly string[] | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): OrderEvent {
  const header =
    typeof signatureHeader === 'object' && signatureHeader !== null ? signatureHeader.join(',') : signatureHeader;
  assertSignature(rawBody, header, secret, options);
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody));
  } catch {
    throw new WebhookSignatureError('BODY_NOT_AN_EVENT', 'the signed body is not JSON');
  }
  const event = parsed as Record<string, unknown> | null;
  if (
    typeof event !== 'object' ||
    event === null ||
    EVENT_FIELDS.some((field) => typeof event[field] !== 'string') ||
    typeof event.order_version !== 'number'
  )
    throw new WebhookSignatureError('BODY_NOT_AN_EVENT', 'the signed body is not an order event');
  return event as unknown as OrderEvent;
}
