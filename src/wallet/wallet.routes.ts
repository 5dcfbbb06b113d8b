import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.deps.ts';
import { keyedDeps } from '../app.deps.ts';
import { principalOf, requirePrincipal } from '../platform/auth.ts';
import { executeKeyed, idempotencyKeyOf, jsonResponse, requestDigest, sendKeyed } from '../idempotency/index.ts';
import { emptyBodyAsObject } from '../platform/reason.ts';
import { findBalance, listTransfers } from './wallet.repo.ts';
import { creditIdFor, creditWallet } from './wallet.service.ts';

import {
  adminWalletSchema,
  creditWalletSchema,
  ownWalletSchema,
  type CreditBody,
  type UserParams,
} from './wallet.schemas.ts';

export function walletRoutes(app: FastifyInstance, deps: AppDeps): void {
  const admin = requirePrincipal(deps.signer, 'admin');

  app.post<{ Params: UserParams; Body: CreditBody }>(
    '/v1/admin/wallets/:user/credits',
    { onRequest: admin, preValidation: emptyBodyAsObject, schema: creditWalletSchema },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = idempotencyKeyOf(request, reply);
      const owner = { tenantId: principal.tenantId, userId: request.params.user };
      const result = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'wallet_credit', key },
        // The reason is not part of the digest: the same key and amount with other words replays the first credit.
        digest: requestDigest('wallet_credit', { user: owner.userId }, { amount: request.body.amount }),
        finalOnly: true,
        async start(tx) {
          const transferId = creditIdFor(key);
          const author = {
            operator: principal.userId,
            operatorTenant: principal.tenantId,
            reason: request.body.reason,
          };
          await creditWallet(tx, owner, request.body.amount, transferId, author, deps.clock.now());
          const balance = await findBalance(tx, owner.tenantId, owner.userId);
          return {
            final: jsonResponse(
              201,
              { user: owner.userId, balance, transfer_id: transferId },
              `/v1/admin/wallets/${encodeURIComponent(owner.userId)}`,
            ),
          };
        },
      });
      return sendKeyed(reply, result);
    },
  );

  app.get('/v1/wallet', { onRequest: requirePrincipal(deps.signer), schema: ownWalletSchema }, async (request) => {
    const { tenantId, userId } = principalOf(request);
    return { balance: await findBalance(deps.db, tenantId, userId) };
  });

  app.get<{ Params: UserParams }>(
    '/v1/admin/wallets/:user',
    { onRequest: admin, schema: adminWalletSchema },
    async (request) => {
      const { tenantId } = principalOf(request);
      const user = request.params.user;
      const [balance, transfers] = await Promise.all([
        findBalance(deps.db, tenantId, user),
        listTransfers(deps.db, tenantId, user),
      ]);
      return { user, balance, transfers };
    },
  );
}
