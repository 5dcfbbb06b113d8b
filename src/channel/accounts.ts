import type { FastifyInstance } from 'fastify';
import { fail } from '../platform/http.ts';
import { channelSchemas } from './channel.openapi.ts';

// Customer accounts of the provider double (seed 002's balance): a charge above the balance is
// declined with INSUFFICIENT_FUNDS, a charge takes from it, a refund gives it back. Kept in memory
// (a test double's fixture, set per test through /_control/accounts); a customer without an
// account is charged without limit, as before.

export class Accounts {
  private balances = new Map<string, number>();
  /** The customer each charged merchant order was taken from, so its refund gives back to them. */
  private chargedFrom = new Map<string, { customer: string; amount: number }>();

  set(customer: string, balance: number): void {
    this.balances.set(customer, balance);
  }

  get(customer: string): number | undefined {
    return this.balances.get(customer);
  }

  /** Whether a new charge of `amount` must be declined for lack of funds. */
  insufficient(customer: string | undefined, amount: number): boolean {
    if (customer === undefined) return false;
    const balance = this.balances.get(customer);
    return balance !== undefined && amount > balance;
  }

  /** A new charge committed for `merchantOrder` (called once per charge, under the order's lock). */
  charged(customer: string | undefined, merchantOrder: string, amount: number): void {
    if (customer === undefined) return;
    const balance = this.balances.get(customer);
    if (balance === undefined) return;
    this.balances.set(customer, balance - amount);
    this.chargedFrom.set(merchantOrder, { customer, amount });
  }

  /** A new refund committed for `merchantOrder`: the money goes back to whom it came from. */
  refunded(merchantOrder: string): void {
    const from = this.chargedFrom.get(merchantOrder);
    if (!from) return;
    this.chargedFrom.delete(merchantOrder);
    this.balances.set(from.customer, (this.balances.get(from.customer) ?? 0) + from.amount);
  }

  clear(): void {
    this.balances.clear();
    this.chargedFrom.clear();
  }
}

export function registerAccountControlRoutes(app: FastifyInstance, accounts: Accounts): void {
  app.post('/_control/accounts', { schema: channelSchemas.setAccount }, async (request) => {
    const body = request.body as { customer: string; balance: number };
    accounts.set(body.customer, body.balance);
    return { customer: body.customer, balance: body.balance };
  });
  // The customer is "<tenant>/<user>": the slash arrives URL-encoded in one path segment, or as a wildcard.
  app.get('/_control/accounts/*', { schema: channelSchemas.getAccount }, async (request) => {
    const name = decodeURIComponent((request.params as { '*': string })['*']);
    const balance = accounts.get(name);
    if (balance === undefined) fail('NOT_FOUND', `no account for customer ${name}`);
    return { customer: name, balance };
  });
}
