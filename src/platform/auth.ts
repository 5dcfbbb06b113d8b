import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import { SignJWT } from 'jose';
import { AppError } from './errors.ts';
import { tokenVerifier } from './token.verify.ts';

// `operator` is an admin of every tenant: the cross-tenant routes (outbox drain) and views.
export type Scope = 'buyer' | 'admin' | 'operator';
const SCOPES: readonly Scope[] = ['buyer', 'admin', 'operator'];

/** The authenticated principal. Tenant and user come only from a verified token, never a header. */
export interface Principal {
  tenantId: string;
  userId: string;
  scope: Scope;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

// Pinned: a token naming any other algorithm (`none` included) is refused before its MAC is read.
const ALGORITHM = 'HS256';
/**
 * What a token's `sub` and `tid` may be: 1..128 visible ASCII characters. Routes that name a user
 * in their path (an admin crediting a wallet) take the same grammar, so no money lands on a user
 * id no token can carry (issue 40).
 */
export const PRINCIPAL_ID_PATTERN = '^[\\x21-\\x7e]{1,128}$';
const ID_PATTERN = new RegExp(PRINCIPAL_ID_PATTERN);
/** RFC 7518 §3.2: an HS256 key shorter than the hash output (32 bytes) weakens the MAC. */
export const MIN_SECRET_BYTES = 32;
// Clocks of the issuer and of this server may disagree by this much on `exp`, `nbf` and `iat`.
const CLOCK_TOLERANCE_S = 30;
// A token lives at most this long, whoever issued it; `flashpay token --ttl` is bounded by it.
export const MAX_TOKEN_TTL_S = 7 * 24 * 3600;

export interface TokenOptions {
  /** When set, tokens carry and must carry `iss` = this. */
  issuer?: string;
  /** When set, tokens carry and must carry this `aud`. */
  audience?: string;
}

/** Refuses a secret too short to sign with (each secret: tokens, notifications, events, control). */
export function assertSecretStrength(name: string, secret: string): void {
  if (Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES)
    throw new Error(`${name} must be at least ${MIN_SECRET_BYTES} bytes long`);
}

export interface TokenSigner {
  sign(principal: Principal, ttlSeconds?: number): Promise<string>;
  verify(token: string): Promise<Principal>;
}

// Verified tokens are remembered until they expire: the same bytes carry the same verified
// signature, and a buyer retrying in a flash sale presents the same token many times.
const VERIFIED_CACHE_MAX = 10_000;

export function tokenSigner(secret: string, options: TokenOptions = {}): TokenSigner {
  assertSecretStrength('the bearer token secret', secret);
  const key = new TextEncoder().encode(secret);
  const verified = new Map<string, { principal: Principal; expiresAtMs: number }>();
  // `exp` is required: a token without one would be valid forever.
  const verifyToken = tokenVerifier(key, {
    algorithm: ALGORITHM,
    requiredClaims: ['exp', 'sub'],
    clockToleranceS: CLOCK_TOLERANCE_S,
    ...(options.issuer ? { issuer: options.issuer } : {}),
    ...(options.audience ? { audience: options.audience } : {}),
  });
  return {
    async sign(principal, ttlSeconds = 3600) {
      if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TOKEN_TTL_S)
        throw new Error(`a token's ttl is 1..${MAX_TOKEN_TTL_S} seconds`);
      const jwt = new SignJWT({ tid: principal.tenantId, scope: principal.scope })
        .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
        .setSubject(principal.userId)
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`);
      if (options.issuer) jwt.setIssuer(options.issuer);
      if (options.audience) jwt.setAudience(options.audience);
      return jwt.sign(key);
    },
    async verify(token) {
      const cached = verified.get(token);
      if (cached && cached.expiresAtMs > Date.now()) return cached.principal;
      const payload = await verifyToken(token);
      const { sub, tid, scope } = payload as { sub?: unknown; tid?: unknown; scope?: unknown };
      if (typeof sub !== 'string' || !ID_PATTERN.test(sub)) throw new Error('bad sub');
      if (typeof tid !== 'string' || !ID_PATTERN.test(tid)) throw new Error('bad tid');
      if (typeof scope !== 'string' || !SCOPES.includes(scope as Scope)) throw new Error('bad scope');
      const principal: Principal = { tenantId: tid, userId: sub, scope: scope as Scope };
      if (typeof payload.exp !== 'number') throw new Error('no exp');
      // A token valid for years is as good as one without `exp`.
      if (payload.exp - Date.now() / 1000 > MAX_TOKEN_TTL_S + CLOCK_TOLERANCE_S) throw new Error('exp too far away');
      if (verified.size >= VERIFIED_CACHE_MAX) verified.clear();
      verified.set(token, { principal, expiresAtMs: payload.exp * 1000 });
      return principal;
    },
  };
}

export async function authenticate(signer: TokenSigner, request: FastifyRequest): Promise<Principal> {
  const header = request.headers.authorization;
  // RFC 9110 §11.1: the auth scheme is case-insensitive (`bearer`, `BEARER`).
  const match = typeof header === 'string' ? /^Bearer +([A-Za-z0-9._~+/=-]+)$/i.exec(header) : null;
  if (!match?.[1])
    throw new AppError('UNAUTHENTICATED', 'a bearer token is required', {}, { 'WWW-Authenticate': 'Bearer' });
  try {
    return await signer.verify(match[1]);
  } catch {
    throw new AppError(
      'UNAUTHENTICATED',
      'the bearer token is invalid or expired',
      {},
      { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
    );
  }
}

export function requireAdmin(principal: Principal): void {
  if (principal.scope !== 'admin' && principal.scope !== 'operator')
    throw new AppError('FORBIDDEN', 'this route needs an admin token');
}

export function requireOperator(principal: Principal): void {
  if (principal.scope !== 'operator')
    throw new AppError('FORBIDDEN', 'this route acts across tenants and needs an operator token');
}

/**
 * The tenant an admin route acts on: the token's own, or undefined (every tenant) for an
 * operator. A tenant's admin never sees or moves another tenant's rows.
 */
export function tenantScope(principal: Principal): string | undefined {
  return principal.scope === 'operator' ? undefined : principal.tenantId;
}

export const DEV_SECRET_PREFIX = 'dev-only-';

/**
 * A secret from the environment or, for development only, one generated once and kept under the
 * data directory (so tokens survive restarts). `generated` tells `start` to say so.
 */
export async function loadSecret(
  envValue: string | undefined,
  dataDir: string,
  name: string,
): Promise<{ secret: string; generated: boolean }> {
  if (envValue) return { secret: envValue, generated: false };
  const file = path.join(dataDir, `${name}.secret`);
  if (existsSync(file)) return { secret: (await readFile(file, 'utf8')).trim(), generated: true };
  await mkdir(dataDir, { recursive: true });
  // 32 random bytes, hex: per installation, never a constant; the prefix marks it for `start --production`.
  const secret = `${DEV_SECRET_PREFIX}${randomBytes(32).toString('hex')}`;
  await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' }).catch(async () => undefined);
  return { secret: (await readFile(file, 'utf8')).trim(), generated: true };
}

/** Route hooks: `onRequest: requirePrincipal(signer)` or `requirePrincipal(signer, 'admin')`. */
export function requirePrincipal(signer: TokenSigner, scope: Scope = 'buyer') {
  return async (request: FastifyRequest): Promise<void> => {
    const principal = await authenticate(signer, request);
    if (scope === 'admin') requireAdmin(principal);
    if (scope === 'operator') requireOperator(principal);
    request.principal = principal;
  };
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route has no authentication hook');
  return request.principal;
}
