import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { AppError } from '../platform/errors.ts';
import { rateLimiter } from '../platform/ratelimit.ts';
import { devTokenSchema } from './web.schemas.ts';

// A demo buyer's token lives one hour; the storefront asks again after that.
const DEMO_TOKEN_TTL_S = 3600;
// Per client address (the limiter gives an address ten times this): a sign-in button, not a mint.
const DEMO_TOKENS_PER_MINUTE = 6;

/**
 * `POST /v1/dev/token {user, tenant?}`: a buyer token for the storefront's "sign in as a demo
 * buyer". Development only — in production (NODE_ENV=production, `start --production`) it is 403
 * before anything is signed. Buyer scope only: an admin token comes from `flashpay token --admin`.
 */
export function devTokenRoute(app: FastifyInstance, deps: AppDeps): void {
  const limit = rateLimiter({ perMinute: DEMO_TOKENS_PER_MINUTE });
  app.post<{ Body: { user: string; tenant?: string } }>(
    '/v1/dev/token',
    { preValidation: limit, schema: devTokenSchema },
    async (request) => {
      if (deps.config.production)
        throw new AppError('FORBIDDEN', 'demo tokens are for development only; this server runs in production');
      const tenant = request.body.tenant ?? 'acme';
      const token = await deps.signer.sign(
        { tenantId: tenant, userId: request.body.user, scope: 'buyer' },
        DEMO_TOKEN_TTL_S,
      );
      return { token, tenant, user: request.body.user, scope: 'buyer' as const, expires_in: DEMO_TOKEN_TTL_S };
    },
  );
}
