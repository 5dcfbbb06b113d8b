// What the reconciliation's negative controls share (cases.ts, cases.global.ts, cases.saga.ts): the
// case's shape, the mismatches a plant always drags along, and the plants' small helpers.
import { expect } from 'vitest';
import { channelClient } from '../../src/payments/channel.client.ts';
import { payTimeoutOf } from '../../src/platform/provider.config.ts';
import type { MismatchClass } from '../../src/reconcile/reconcile.rules.ts';
import { type PaymentStack } from '../support/payments.ts';
import * as plant from '../support/plant.ts';
import { drain, reconciliation } from './scenario.ts';
import { GLOBAL, HOLD_TTL_MS, PRICE, type Scenario } from './scenario.ts';

/** `[order_id, class]`, optionally with text its detail must contain. */
export type Expected = Array<[orderId: string, mismatch: MismatchClass, detail?: string]>;

export interface Case {
  /** The class this case exists to fire. */
  proves: MismatchClass;
  /** One sentence: the broken safeguard and what the checker must say. */
  title: string;
  /** Needs the provider's books in PostgreSQL (plant.startLedgerPaymentStack). */
  ledger?: true;
  plant(s: PaymentStack, scenario: Scenario): Promise<Expected>;
  /** Optional contrast after the assertion: the real repair path, back to clean. */
  repair?(s: PaymentStack, scenario: Scenario): Promise<void>;
}

// Paid money the orders do not account for always also moves channel_net away from paid_sum;
// a CONFIRMED reservation without a PAID order (or the reverse) always also moves confirmed != paid.
export const NET: [string, MismatchClass] = [GLOBAL, 'CHANNEL_NET_NE_PAID_SUM'];
export const CONFIRMED: [string, MismatchClass] = [GLOBAL, 'CONFIRMED_NE_PAID'];

/** The classes' stacks wait this long for the provider: a healthy pay is PAID even on a loaded machine. */
export const PAY_TIMEOUT_MS = 1_500;
/** A charge delayed this long is a lost answer (UNKNOWN) at PAY_TIMEOUT_MS. */
export const LOST_MS = PAY_TIMEOUT_MS + 500;

export const db = (s: PaymentStack) => s.db.pool;
export const client = (s: PaymentStack, timeoutMs = payTimeoutOf(s.deps.config, 'fake')) =>
  channelClient(s.channel.url, timeoutMs);
export const expire = async (s: PaymentStack) => {
  s.clock.advance(HOLD_TTL_MS + 1);
  expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(1);
};
export const fault = (s: PaymentStack, op: string, kind: string, merchantOrder: string, ms?: number) =>
  s.control('POST', '/_control/faults', {
    op,
    kind,
    merchant_order: merchantOrder,
    ...(ms === undefined ? {} : { ms }),
  });
export function ledgerOf(s: PaymentStack) {
  if (!('ledger' in s)) throw new Error('this case needs startLedgerPaymentStack');
  return (s as plant.LedgerPaymentStack).ledger;
}

/** A buyer with a wallet, an order on a SKU of its own paid from it; the report stays clean. */
export async function walletPaid(s: PaymentStack, user: string, sku: string): Promise<string> {
  await s.call('POST', '/v1/admin/skus', { token: s.admin, body: { sku, name: sku, price: PRICE, stock: 1 } });
  expect(
    (
      await s.call('POST', `/v1/admin/wallets/${user}/credits`, {
        token: s.admin,
        body: { amount: 2 * PRICE, reason: 'test top-up' },
        headers: { 'idempotency-key': `fund-${user}` },
      })
    ).status,
  ).toBe(201);
  const bought = await s.buy(user, sku);
  expect(
    (
      await s.call('POST', `/v1/orders/${bought.orderId}/pay`, {
        token: bought.token,
        body: { method: 'wallet' },
        headers: { 'idempotency-key': `wpay-${user}` },
      })
    ).body.status,
  ).toBe('PAID');
  await drain(s);
  const report = await reconciliation(s);
  expect([report.mismatches, report.totals.wallet_net, report.totals.paid_sum]).toEqual([[], PRICE, 3 * PRICE]);
  return bought.orderId;
}
