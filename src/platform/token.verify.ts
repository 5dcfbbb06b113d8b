import { createHmac, timingSafeEqual } from 'node:crypto';
import { jwtVerify, type JWTPayload } from 'jose';

/*
 * HS256 bearer tokens verified without a thread hop. jose verifies through WebCrypto: an async job
 * on libuv's thread pool, and a key import per call when given bytes — about 100 µs of CPU per
 * token on this machine, 58 µs with the key imported once, against about 10 µs for the same MAC
 * with node:crypto. In a flash sale most buyers send one or two requests, so nearly every token is
 * new to the verified-token cache (auth.ts) and this is paid per buyer (docs/benchmarks/journal.md §17).
 *
 * The fast path accepts only tokens of the one shape flashpay issues, and only when every check
 * passes; anything else — another header, a claim it does not know, a number that is not one, a
 * non-canonical base64url, a time check that fails — goes to jose, which then accepts or refuses it
 * by its own rules. So the fast path never accepts a token jose would refuse; it only answers the
 * common case sooner. tests/security/token-verify.test.ts holds both to the same verdict on a set
 * of crafted tokens.
 */

export interface VerifyOptions {
  algorithm: 'HS256';
  requiredClaims: readonly string[];
  clockToleranceS: number;
  issuer?: string;
  audience?: string;
}

const SEGMENTS = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;
/** The claims the fast path knows; any other sends the token to jose. */
const KNOWN_CLAIMS = new Set(['sub', 'tid', 'scope', 'exp', 'iat', 'nbf', 'iss', 'aud']);

// As jose's: bytes that are not UTF-8 are an error, not U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeJson(segment: string): unknown {
  const bytes = Buffer.from(segment, 'base64url');
  // Buffer's decoder skips what is not base64url; a segment must be exactly the encoding of its bytes.
  if (bytes.toString('base64url') !== segment) return undefined;
  try {
    return JSON.parse(utf8.decode(bytes)) as unknown;
  } catch {
    return undefined;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isNumericDate = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** The payload if the token takes the fast path and passes every check; undefined: ask jose. */
export function fastVerify(
  token: string,
  key: Uint8Array,
  options: VerifyOptions,
  nowS: number,
): JWTPayload | undefined {
  const match = SEGMENTS.exec(token);
  if (!match) return undefined;
  const [, headerPart, payloadPart, signaturePart] = match as unknown as [string, string, string, string];
  const header = decodeJson(headerPart);
  if (!isObject(header) || header.alg !== options.algorithm) return undefined;
  for (const name of Object.keys(header))
    if (name !== 'alg' && (name !== 'typ' || header.typ !== 'JWT')) return undefined;
  const expected = createHmac('sha256', key).update(`${headerPart}.${payloadPart}`).digest('base64url');
  if (!timingSafeEqual(Buffer.from(expected), Buffer.from(signaturePart))) return undefined;
  const payload = decodeJson(payloadPart);
  if (!isObject(payload)) return undefined;
  for (const name of Object.keys(payload)) if (!KNOWN_CLAIMS.has(name)) return undefined;
  for (const name of options.requiredClaims) if (!Object.hasOwn(payload, name)) return undefined;
  const tolerance = options.clockToleranceS;
  if (!isNumericDate(payload.exp) || payload.exp <= nowS - tolerance) return undefined;
  if (payload.nbf !== undefined && (!isNumericDate(payload.nbf) || payload.nbf > nowS + tolerance)) return undefined;
  if (payload.iat !== undefined && !isNumericDate(payload.iat)) return undefined;
  if (payload.sub !== undefined && typeof payload.sub !== 'string') return undefined;
  if (options.issuer !== undefined && payload.iss !== options.issuer) return undefined;
  if (options.audience !== undefined && payload.aud !== options.audience) return undefined;
  return payload as JWTPayload;
}

/** The token's payload, verified: the fast path, else jose with the key imported once. Throws if invalid. */
export function tokenVerifier(secret: Uint8Array, options: VerifyOptions): (token: string) => Promise<JWTPayload> {
  const imported = crypto.subtle.importKey('raw', new Uint8Array(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'verify',
  ]);
  // Refusals of the fast path are jose's to explain; a key that will not import fails every jose call.
  imported.catch(() => undefined);
  const joseOptions = {
    algorithms: [options.algorithm],
    requiredClaims: [...options.requiredClaims],
    clockTolerance: options.clockToleranceS,
    ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
    ...(options.audience !== undefined ? { audience: options.audience } : {}),
  };
  return async (token) => {
    const fast = fastVerify(token, secret, options, Math.floor(Date.now() / 1000));
    if (fast) return fast;
    return (await jwtVerify(token, await imported, joseOptions)).payload;
  };
}
