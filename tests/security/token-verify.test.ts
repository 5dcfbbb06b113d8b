import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { jwtVerify, SignJWT } from 'jose';
import { fastVerify, tokenVerifier, type VerifyOptions } from '../../src/platform/token.verify.ts';

// The bearer token's fast path (src/platform/token.verify.ts) against jose on crafted tokens: the
// verifier must accept exactly what jose accepts, with the same payload, and the fast path must
// accept nothing jose refuses. The tokens flashpay issues must take the fast path (or the test
// would pass with the fast path never used).

const key = new TextEncoder().encode('token-verify-test-secret-0123456789abcdef');
const otherKey = new TextEncoder().encode('another-secret-of-the-same-length-0123456789');
const now = Math.floor(Date.now() / 1000);
const TOLERANCE = 30;
const plain: VerifyOptions = { algorithm: 'HS256', requiredClaims: ['exp', 'sub'], clockToleranceS: TOLERANCE };
const bound: VerifyOptions = { ...plain, issuer: 'https://issuer.example', audience: 'flashpay' };

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** A token assembled by hand: any header, any payload bytes, signed with `with` (or a given signature). */
function craft(
  header: unknown,
  payload: unknown,
  options: { raw?: Buffer; with?: Uint8Array; signature?: string } = {},
) {
  const head = b64(JSON.stringify(header));
  const body = options.raw ? b64(options.raw) : b64(JSON.stringify(payload));
  const signature =
    options.signature ??
    createHmac('sha256', options.with ?? key)
      .update(`${head}.${body}`)
      .digest('base64url');
  return `${head}.${body}.${signature}`;
}

const claims = (extra: Record<string, unknown> = {}) => ({
  tid: 'acme',
  scope: 'buyer',
  sub: 'u1',
  iat: now,
  exp: now + 600,
  ...extra,
});
const HS = { alg: 'HS256', typ: 'JWT' };

async function issued(options: VerifyOptions): Promise<string> {
  const jwt = new SignJWT({ tid: 'acme', scope: 'buyer' })
    .setProtectedHeader(HS)
    .setSubject('u1')
    .setIssuedAt()
    .setExpirationTime('10m');
  if (options.issuer) jwt.setIssuer(options.issuer);
  if (options.audience) jwt.setAudience(options.audience);
  return jwt.sign(key);
}

async function jose(token: string, options: VerifyOptions) {
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      requiredClaims: [...options.requiredClaims],
      clockTolerance: options.clockToleranceS,
      ...(options.issuer ? { issuer: options.issuer } : {}),
      ...(options.audience ? { audience: options.audience } : {}),
    });
    return { ok: true as const, payload };
  } catch {
    return { ok: false as const };
  }
}

async function ours(token: string, options: VerifyOptions) {
  try {
    return { ok: true as const, payload: await tokenVerifier(key, options)(token) };
  } catch {
    return { ok: false as const };
  }
}

function flip(token: string, part: number): string {
  const parts = token.split('.');
  const s = parts[part]!;
  const i = Math.floor(s.length / 2);
  parts[part] = s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  return parts.join('.');
}

describe('bearer tokens: the fast path agrees with jose', () => {
  it('TV-01 the tokens flashpay issues take the fast path, with and without iss/aud, and both accept them', async () => {
    for (const options of [plain, bound]) {
      const token = await issued(options);
      const fast = fastVerify(token, key, options, now);
      expect(fast).toMatchObject({ sub: 'u1', tid: 'acme', scope: 'buyer' });
      expect(await ours(token, options)).toEqual(await jose(token, options));
      expect((await jose(token, options)).ok).toBe(true);
    }
  });

  it('TV-02 on crafted tokens the verifier gives jose verdict and payload; the fast path accepts none jose refuses', async () => {
    const valid = craft(HS, claims());
    const cases: Record<string, [string, VerifyOptions]> = {
      valid: [valid, plain],
      'no typ': [craft({ alg: 'HS256' }, claims()), plain],
      'typ at+jwt': [craft({ alg: 'HS256', typ: 'at+jwt' }, claims()), plain],
      'kid in header': [craft({ ...HS, kid: 'k1' }, claims()), plain],
      'crit in header': [craft({ ...HS, crit: ['exp'] }, claims()), plain],
      'b64 false': [craft({ ...HS, b64: false, crit: ['b64'] }, claims()), plain],
      'alg none, no signature': [`${b64(JSON.stringify({ alg: 'none' }))}.${b64(JSON.stringify(claims()))}.`, plain],
      'alg none, a MAC': [craft({ alg: 'none', typ: 'JWT' }, claims()), plain],
      'alg HS512': [craft({ alg: 'HS512', typ: 'JWT' }, claims()), plain],
      'another key': [craft(HS, claims(), { with: otherKey }), plain],
      'signature flipped': [flip(valid, 2), plain],
      'payload flipped': [flip(valid, 1), plain],
      'signature padded': [`${valid}=`, plain],
      'signature one char short': [valid.slice(0, -1), plain],
      'expired beyond tolerance': [craft(HS, claims({ exp: now - TOLERANCE - 5 })), plain],
      'expired within tolerance': [craft(HS, claims({ exp: now - 10 })), plain],
      'exp as string': [craft(HS, claims({ exp: String(now + 600) })), plain],
      'no exp': [craft(HS, { tid: 'acme', scope: 'buyer', sub: 'u1' }), plain],
      'no sub': [craft(HS, { tid: 'acme', scope: 'buyer', exp: now + 600 }), plain],
      'sub a number': [craft(HS, claims({ sub: 7 })), plain],
      'nbf in the future': [craft(HS, claims({ nbf: now + TOLERANCE + 60 })), plain],
      'nbf within tolerance': [craft(HS, claims({ nbf: now + 10 })), plain],
      'nbf as string': [craft(HS, claims({ nbf: 'soon' })), plain],
      'iat as string': [craft(HS, claims({ iat: 'now' })), plain],
      'an unknown claim (jti)': [craft(HS, claims({ jti: 'j1' })), plain],
      'payload an array': [craft(HS, [claims()]), plain],
      'payload not JSON': [craft(HS, null, { raw: Buffer.from('{"sub":') }), plain],
      'payload not UTF-8': [
        craft(HS, null, {
          raw: Buffer.concat([Buffer.from(`{"sub":"u\xff`, 'latin1'), Buffer.from(`","exp":${now + 600}}`)]),
        }),
        plain,
      ],
      'iss and aud as configured': [craft(HS, claims({ iss: bound.issuer, aud: bound.audience })), bound],
      'aud an array holding ours': [craft(HS, claims({ iss: bound.issuer, aud: ['x', bound.audience] })), bound],
      'iss of another issuer': [craft(HS, claims({ iss: 'https://evil.example', aud: bound.audience })), bound],
      'aud of another service': [craft(HS, claims({ iss: bound.issuer, aud: 'other' })), bound],
      'no iss when one is configured': [craft(HS, claims({ aud: bound.audience })), bound],
    };
    const verdicts: Record<string, string> = {};
    for (const [name, [token, options]] of Object.entries(cases)) {
      const expected = await jose(token, options);
      expect(await ours(token, options), name).toEqual(expected);
      const fast = fastVerify(token, key, options, now);
      if (fast) expect(expected.ok, `${name}: the fast path accepted what jose refuses`).toBe(true);
      verdicts[name] = `${expected.ok ? 'accept' : 'refuse'}${fast ? ' (fast)' : ''}`;
    }
    // The verdicts themselves, so that a jose upgrade that changed one is seen here.
    expect(verdicts).toMatchObject({
      valid: 'accept (fast)',
      'no typ': 'accept (fast)',
      'kid in header': 'accept',
      'an unknown claim (jti)': 'accept',
      'aud an array holding ours': 'accept',
      'expired within tolerance': 'accept (fast)',
      'nbf within tolerance': 'accept (fast)',
      'alg none, no signature': 'refuse',
      'alg HS512': 'refuse',
      'another key': 'refuse',
      'signature flipped': 'refuse',
      'expired beyond tolerance': 'refuse',
      'exp as string': 'refuse',
      'no exp': 'refuse',
      'nbf in the future': 'refuse',
      'payload not UTF-8': 'refuse',
      'iss of another issuer': 'refuse',
      'aud of another service': 'refuse',
    });
  });
});
