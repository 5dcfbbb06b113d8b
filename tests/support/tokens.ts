import { SignJWT } from 'jose';
import { TEST_JWT_SECRET } from './stack.ts';

/**
 * A token as an attacker or a sloppy issuer would mint it: any claims, any header, any secret.
 * `exp: null` leaves the expiry out; `alg: 'none'` gives an unsigned token.
 */
export async function rawToken(
  claims: Record<string, unknown>,
  options: { secret?: string; alg?: string; exp?: number | null } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const body: Record<string, unknown> = { iat: now, ...claims };
  if (options.exp !== null) body.exp = options.exp ?? now + 600;
  if (options.alg === 'none') {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    return `${encode({ alg: 'none', typ: 'JWT' })}.${encode(body)}.`;
  }
  return new SignJWT(body)
    .setProtectedHeader({ alg: options.alg ?? 'HS256' })
    .sign(new TextEncoder().encode(options.secret ?? TEST_JWT_SECRET));
}

export const expiredToken = (tenantId = 'acme', userId = 'alice') =>
  rawToken({ sub: userId, tid: tenantId, scope: 'buyer' }, { exp: Math.floor(Date.now() / 1000) - 120 });
