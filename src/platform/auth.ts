import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import { jwtVerify, SignJWT } from 'jose';
import { AppError } from './errors.ts';

export type Scope = 'buyer' | 'admin';

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

const ALGORITHM = 'HS256';
const ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

export interface TokenSigner {
  sign(principal: Principal, ttlSeconds?: number): Promise<string>;
  verify(token: string): Promise<Principal>;
}

// Verified tokens are remembered until they expire: the same bytes carry the same verified
// signature, and a buyer retrying in a flash sale presents the same token many times.
const VERIFIED_CACHE_MAX = 10_000;

export function tokenSigner(secret: string): TokenSigner {
  const key = new TextEncoder().encode(secret);
  const verified = new Map<string, { principal: Principal; expiresAtMs: number }>();
  return {
    async sign(principal, ttlSeconds = 3600) {
      return new SignJWT({ tid: principal.tenantId, scope: principal.scope })
        .setProtectedHeader({ alg: ALGORITHM })
        .setSubject(principal.userId)
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .sign(key);
    },
    async verify(token) {
      const cached = verified.get(token);
      if (cached && cached.expiresAtMs > Date.now()) return cached.principal;
      const { payload } = await jwtVerify(token, key, { algorithms: [ALGORITHM] });
      const { sub, tid, scope } = payload as { sub?: unknown; tid?: unknown; scope?: unknown };
      if (typeof sub !== 'string' || !ID_PATTERN.test(sub)) throw new Error('bad sub');
      if (typeof tid !== 'string' || !ID_PATTERN.test(tid)) throw new Error('bad tid');
      if (scope !== 'buyer' && scope !== 'admin') throw new Error('bad scope');
      const principal: Principal = { tenantId: tid, userId: sub, scope };
      if (typeof payload.exp === 'number') {
        if (verified.size >= VERIFIED_CACHE_MAX) verified.clear();
        verified.set(token, { principal, expiresAtMs: payload.exp * 1000 });
      }
      return principal;
    },
  };
}

export async function authenticate(signer: TokenSigner, request: FastifyRequest): Promise<Principal> {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer ([A-Za-z0-9._~+/=-]+)$/.exec(header) : null;
  if (!match?.[1]) throw new AppError('UNAUTHENTICATED', 'a bearer token is required', {}, { 'WWW-Authenticate': 'Bearer' });
  try {
    return await signer.verify(match[1]);
  } catch {
    throw new AppError('UNAUTHENTICATED', 'the bearer token is invalid or expired', {}, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  }
}

export function requireAdmin(principal: Principal): void {
  if (principal.scope !== 'admin') throw new AppError('FORBIDDEN', 'this route needs an admin token');
}

/**
 * A secret from the environment or, for development only, one generated once and kept under the
 * data directory (so tokens survive restarts). `generated` tells `start` to say so.
 */
export async function loadSecret(envValue: string | undefined, dataDir: string, name: string): Promise<{ secret: string; generated: boolean }> {
  if (envValue) return { secret: envValue, generated: false };
  const file = path.join(dataDir, `${name}.secret`);
  if (existsSync(file)) return { secret: (await readFile(file, 'utf8')).trim(), generated: true };
  await mkdir(dataDir, { recursive: true });
  const secret = `dev-only-${randomBytes(24).toString('hex')}`;
  await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' }).catch(async () => undefined);
  return { secret: (await readFile(file, 'utf8')).trim(), generated: true };
}

/** Route hooks: `onRequest: requirePrincipal(signer)` or `requirePrincipal(signer, 'admin')`. */
export function requirePrincipal(signer: TokenSigner, scope: Scope = 'buyer') {
  return async (request: FastifyRequest): Promise<void> => {
    const principal = await authenticate(signer, request);
    if (scope === 'admin') requireAdmin(principal);
    request.principal = principal;
  };
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route has no authentication hook');
  return request.principal;
}
