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
  toleranceSeconds?: number;
  /** "Now", for tests (default: the clock). */
  nowSeconds?: number;
}

const encoder = new TextEncoder();

function bytesOf(body: string | Uint8Array): Uint8Array {
  return typeof body === 'string' ? encoder.encode(body) : body;
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

/** Throws a WebhookSignatureError unless `header` signs the exact `rawBody` under `secret`, recently. */
export function assertSignature(
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): void {
  if (!header) throw new WebhookSignatureError('SIGNATURE_MISSING', 'Flashpay-Signature header is missing');
  const parts = new Map(header.split(',').map((part) => part.trim().split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || !/^[0-9a-f]{64}$/.test(given))
    throw new WebhookSignatureError('SIGNATURE_MALFORMED', 'Flashpay-Signature is malformed');
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > tolerance)
    throw new WebhookSignatureError(
      'TIMESTAMP_OUT_OF_TOLERANCE',
      `signature timestamp is more than ${tolerance}s from now`,
    );
  const expected = signPayload(secret, rawBody, t).slice(`t=${t},v1=`.length);
  if (!equalConstantTime(expected, given))
    throw new WebhookSignatureError('SIGNATURE_MISMATCH', 'signature does not match the body and secret');
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
 * signs with (FLASHPAY_EVENTS_SECRET). Throws WebhookSignatureError when anything is off.
 */
export function constructEvent(
  rawBody: string | Uint8Array,
  signatureHeader: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): OrderEvent {
  assertSignature(rawBody, signatureHeader, secret, options);
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
