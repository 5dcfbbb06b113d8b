import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { keyedDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal } from '../platform/auth.ts';
import { executeKeyed, idempotencyKeyOf, jsonResponse, requestDigest, sendKeyed } from '../idempotency/index.ts';
import { findBalance, listTransfers } from './wallet.repo.ts';
import { creditIdFor, creditWallet } from './wallet.service.ts';

// A credit is a top-up or a gift card, not a treasury: 10^10 minor units keeps every sum exact.
const MAX_CREDIT = 10_000_000_000;

const userParams = { type: 'object', required: ['user'], properties: { user: { type: 'string', minLength: 1, maxLength: 128 } } } as const;
const creditBody = { type: 'object', required: ['amount'], additionalProperties: false, properties: { amount: { type: 'integer', minimum: 1, maximum: MAX_CREDIT } } } as const;

export function walletRoutes(app: FastifyInstance, deps: AppDeps): void {
  const admin = requirePrincipal(deps.signer, 'admin');

  app.post<{ Params: { user: string }; Body: { amount: number } }>(
    '/v1/admin/wallets/:user/credits',
    { onRequest: admin, schema: { params: userParams, body: creditBody, tags: ['admin'] } },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const owner = { tenantId: principal.tenantId, userId: request.params.user };
      const result = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'wallet_credit', key },
        digest: requestDigest('wallet_credit', { user: owner.userId }, { amount: request.body.amount }),
        async start(tx) {
          const transferId = creditIdFor(key);
          await creditWallet(tx, owner, request.body.amount, transferId, deps.clock.now());
          const balance = await findBalance(tx, owner.tenantId, owner.userId);
          return { final: jsonResponse(201, { user: owner.userId, balance, transfer_id: transferId }, `/v1/admin/wallets/${encodeURIComponent(owner.userId)}`) };
        },
      });
      return sendKeyed(reply, result);
    },
  );

  app.get('/v1/wallet', { onRequest: requirePrincipal(deps.signer), schema: { tags: ['wallet'] } }, async (request) => {
    const { tenantId, userId } = principalOf(request);
    return { balance: await findBalance(deps.db, tenantId, userId) };
  });

  app.get<{ Params: { user: string } }>('/v1/admin/wallets/:user', { onRequest: admin, schema: { params: userParams, tags: ['admin'] } }, async (request) => {
    const { tenantId } = principalOf(request);
    const user = request.params.user;
    const [balance, transfers] = await Promise.all([findBalance(deps.db, tenantId, user), listTransfers(deps.db, tenantId, user)]);
    return { user, balance, transfers };
  });
}
