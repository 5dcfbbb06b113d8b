import type { FastifyInstance } from 'fastify';
import type { ChannelDeps } from '../channel.routes.ts';
import type { StatementLine } from '../ledger.ts';
import type { StripeDoubleState } from './stripe.state.ts';
import { queryOf } from './stripe.routes.ts';
import { chargeId, chargeObject, listOf, refundObject, stripeError } from './stripe.wire.ts';

// The ledger's statement as Stripe's balance transactions (https://docs.stripe.com/api/balance_transactions):
// newest first, paged by `starting_after`, `source` expandable to its Charge or Refund.

/** Stripe's own page bounds for list endpoints. */
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;

/** A balance transaction's id: the ledger line's place, so a page cursor survives new lines. */
const transactionId = (line: StatementLine) => `txn_${String(line.seq).padStart(12, '0')}`;

function transaction(line: StatementLine, refunded: boolean, currency: string, expand: boolean) {
  const charge = line.type === 'CHARGE';
  const state = { merchantOrder: line.merchantOrder, status: 'succeeded' as const, amount: line.amount, refunded };
  const source = charge
    ? expand
      ? chargeObject(state, currency)
      : chargeId(line.merchantOrder)
    : expand
      ? refundObject(line.merchantOrder, line.ref, line.amount, currency)
      : line.ref;
  const amount = charge ? line.amount : -line.amount;
  return {
    id: transactionId(line),
    object: 'balance_transaction',
    amount,
    net: amount,
    fee: 0,
    currency,
    type: charge ? 'charge' : 'refund',
    reporting_category: charge ? 'charge' : 'refund',
    status: 'available',
    created: Math.floor(Date.parse(line.at) / 1000),
    source,
  };
}

export function registerBalanceTransactions(app: FastifyInstance, deps: ChannelDeps, state: StripeDoubleState): void {
  app.get('/v1/balance_transactions', async (request, reply) => {
    const query = queryOf(request);
    const limit = query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      return reply.code(400).send(stripeError('invalid_request_error', `limit must be 1..${MAX_LIMIT}`));
    const lines = await deps.store.statement();
    const refunded = new Set(lines.filter((l) => l.type === 'REFUND').map((l) => l.merchantOrder));
    const newestFirst = [...lines].reverse();
    let from = 0;
    if (typeof query.starting_after === 'string') {
      const at = newestFirst.findIndex((line) => transactionId(line) === query.starting_after);
      if (at < 0) return reply.code(404).send(stripeError('invalid_request_error', 'No such balance transaction'));
      from = at + 1;
    }
    const expand = listOf(query.expand).includes('data.source');
    const page = newestFirst.slice(from, from + limit);
    return {
      object: 'list',
      url: '/v1/balance_transactions',
      has_more: from + limit < newestFirst.length,
      data: page.map((line) => transaction(line, refunded.has(line.merchantOrder), state.currency, expand)),
    };
  });
}
