import type { FastifyInstance } from 'fastify';
import { fail } from '../platform/http.ts';
import { channelSchemas } from './channel.openapi.ts';
import type { AccountBook } from './ledger.ts';

// Customer accounts of the provider double (seed 002's balance): a charge above the balance is
// declined with INSUFFICIENT_FUNDS, a charge takes from it, a refund gives it back. They live with
// the ledger (its AccountBook; in PostgreSQL for a channel with a database, so a restart keeps
// them: issue 38), set per test through /_control/accounts; a customer without an account is
// charged without limit, as before. The moves themselves are part of a charge's or refund's
// write (AccountMove in ledger.ts), under the merchant order's lock.

export function registerAccountControlRoutes(app: FastifyInstance, accounts: AccountBook): void {
  app.post('/_control/accounts', { schema: channelSchemas.setAccount }, async (request) => {
    const body = request.body as { customer: string; balance: number };
    await accounts.set(body.customer, body.balance);
    return { customer: body.customer, balance: body.balance };
  });
  // The customer is "<tenant>/<user>": the slash arrives URL-encoded in one path segment, or as a wildcard.
  app.get('/_control/accounts/*', { schema: channelSchemas.getAccount }, async (request) => {
    const name = decodeURIComponent((request.params as { '*': string })['*']);
    const balance = await accounts.get(name);
    if (balance === undefined) fail('NOT_FOUND', `no account for customer ${name}`);
    return { customer: name, balance };
  });
}
