import { createHmac, timingSafeEqual } from 'node:crypto';

// Flashpay-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>, the shape
// Stripe uses, so a receiver can reject replays by age and forgeries by MAC.
export const SIGNATURE_HEADER = 'flashpay-signature';

export function signPayload(secret: string, rawBody: string, atSeconds = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac('sha256', secret).update(`${atSeconds}.${rawBody}`).digest('hex');
  return `t=${atSeconds},v1=${mac}`;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

export function verifySignature(
  secret: string,
  header: string | undefined,
  rawBody: string,
  toleranceSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): SignatureCheck {
  if (!header) return { ok: false, reason: 'Flashpay-Signature header is missing' };
  const parts = new Map(header.split(',').map((part) => part.trim().split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || !/^[0-9a-f]{64}$/.test(given))
    return { ok: false, reason: 'Flashpay-Signature is malformed' };
  if (Math.abs(nowSeconds - t) > toleranceSeconds)
    return { ok: false, reason: `signature timestamp is more than ${toleranceSeconds}s away` };
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex'))) return { ok: false, reason: 'signature does not match' };
  return { ok: true };
}
