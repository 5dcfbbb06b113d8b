import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { authenticate, requireOperator, type TokenSigner } from './auth.ts';
import type { Config } from './config.ts';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * `/metrics` tells who buys what, how fast, and where it fails: not public. A scraper presents
 * FLASHPAY_METRICS_TOKEN; a person presents an operator token (every tenant's figures are in it).
 * The two fields it reads, not AppDeps: the kernel never imports the entry points that wire it.
 */
export function metricsGuard(deps: { config: Pick<Config, 'metricsToken'>; signer: TokenSigner }) {
  const expected = deps.config.metricsToken === undefined ? undefined : digest(deps.config.metricsToken);
  return async (request: FastifyRequest): Promise<void> => {
    const given = /^Bearer +(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (expected && given && timingSafeEqual(expected, digest(given))) return;
    const principal = await authenticate(deps.signer, request);
    requireOperator(principal);
    request.principal = principal;
  };
}
