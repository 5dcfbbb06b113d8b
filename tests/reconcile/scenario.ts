// The clean, converged world every negative control starts from, built through the real API, and
// the small helpers the reconciliation tests share. Not a test file: tests/reconcile/*.test.ts use it.
import { expect } from 'vitest';
import { armMutation } from '../../src/platform/mutations.ts';
import type { ReconciliationReport } from '../../src/reconcile/reconcile.service.ts';
import { countRows } from '../support/stack.ts';
import { createSku, eventually, type PaymentStack } from '../support/payments.ts';

export const SKU = 'rc';
export const PRICE = 1990;
// Long enough that nothing expires unless a test moves the clock past it on purpose.
export const HOLD_TTL_MS = 60_000;

export interface Bought {
  orderId: string;
  token: string;
}

/** One order in each settled state (two PAID), all through the real API and the real channel. */
export interface Scenario {
  paid: Bought;
  paid2: Bought;
  failed: Bought;
  cancelled: Bought;
  refunded: Bought;
  created: Bought;
}

export const GLOBAL = 'GLOBAL';

async function askReconciliation(s: PaymentStack): Promise<ReconciliationReport> {
  const result = await s.call('GET', '/v1/admin/reconciliation', { token: s.operator });
  if (result.status !== 200) throw new Error(`reconciliation: ${result.status} ${result.text}`);
  return result.body as ReconciliationReport;
}

// Cases run side by side in one process, and a switched-off rule (issue 55) is off for the whole
// process: passes share the gate, a pass with a rule off waits for the running ones and runs alone.
let gate: Promise<void> = Promise.resolve();
const running = new Set<Promise<unknown>>();

export async function reconciliation(s: PaymentStack): Promise<ReconciliationReport> {
  await gate;
  const pass = askReconciliation(s);
  running.add(pass);
  try {
    return await pass;
  } finally {
    running.delete(pass);
  }
}

/** A full pass with the rule that names `mismatchClass` switched off (`reconcile.rule.<class>`), alone in the process. */
export async function reconciliationWithout(s: PaymentStack, mismatchClass: string): Promise<ReconciliationReport> {
  const before = gate;
  let open = () => {};
  gate = new Promise<void>((resolve) => (open = resolve));
  await before;
  await Promise.allSettled([...running]);
  const disarm = armMutation(`reconcile.rule.${mismatchClass}`);
  try {
    return await askReconciliation(s);
  } finally {
    disarm();
    open();
  }
}

export async function drain(s: PaymentStack): Promise<void> {
  const result = await s.call('POST', '/v1/admin/outbox/drain', { token: s.operator });
  if (result.status !== 200) throw new Error(`drain: ${result.status} ${result.text}`);
}

export async function statusOf(s: PaymentStack, orderId: string): Promise<string> {
  return (await s.order(orderId)).status;
}

export async function holdCallbacks(s: PaymentStack): Promise<void> {
  await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
}

/** A charge made at the provider directly, as a request that bypassed (or outlived) our pay flow. */
export async function chargeAtChannel(s: PaymentStack, merchantOrder: string, amount = PRICE): Promise<void> {
  const reply = (await s.control('POST', '/charge', {
    merchant_order: merchantOrder,
    amount,
    notify_url: s.deps.notifyUrl,
  })) as { result: string };
  expect(reply.result).toBe('CHARGED');
}

/** A refund made at the provider directly, under a key that is not ours. */
export async function refundAtChannel(
  s: PaymentStack,
  merchantOrder: string,
  refundKey: string,
  amount = PRICE,
): Promise<void> {
  const reply = (await s.control('POST', '/refund', {
    merchant_order: merchantOrder,
    refund_key: refundKey,
    amount,
  })) as { result: string };
  expect(reply.result).toBe('REFUNDED');
}

async function paid(s: PaymentStack, user: string): Promise<Bought> {
  const bought = await s.buy(user, SKU);
  expect((await s.pay(bought.token, bought.orderId)).body.status).toBe('PAID');
  return bought;
}

async function cancelled(s: PaymentStack, user: string): Promise<Bought> {
  const bought = await s.buy(user, SKU);
  expect((await s.call('POST', `/v1/orders/${bought.orderId}/cancel`, { token: bought.token })).body.status).toBe(
    'CANCELLED',
  );
  return bought;
}

/**
 * PAID ×2, FAILED (declined), CANCELLED, REFUNDED (a charge that landed after the cancel, refunded
 * by the real compensation path) and one CREATED order still holding its unit; every provider
 * callback delivered, a recovery pass run, the outbox drained.
 */
export async function buildConverged(s: PaymentStack): Promise<Scenario> {
  await createSku(s, { sku: SKU, stock: 6, price: PRICE, hold_ttl_ms: HOLD_TTL_MS });
  const scenario: Partial<Scenario> = {};
  scenario.paid = await paid(s, 'rc-paid');
  scenario.paid2 = await paid(s, 'rc-paid2');
  const failed = await s.buy('rc-failed', SKU);
  await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DECLINE', merchant_order: failed.orderId });
  expect((await s.pay(failed.token, failed.orderId)).body.status).toBe('FAILED');
  scenario.failed = failed;
  scenario.cancelled = await cancelled(s, 'rc-cancelled');
  const refunded = await cancelled(s, 'rc-refunded');
  await chargeAtChannel(s, refunded.orderId); // its CHARGED callback starts the compensating refund
  await eventually(
    () => statusOf(s, refunded.orderId),
    (status) => status === 'REFUNDED',
  );
  scenario.refunded = refunded;
  scenario.created = await s.buy('rc-created', SKU);
  // CHARGED ×2 (DUPLICATE), DECLINED (DUPLICATE), CHARGED after cancel (REFUNDING_ANOMALY), REFUNDED (IGNORED).
  await eventually(
    () => countRows(s.db, 'payment_notifications'),
    (n) => n >= 5,
  );
  expect((await s.recover()).status).toBe(200);
  await drain(s);
  return scenario as Scenario;
}

/** The positive control: the converged world reconciles with nothing to report. */
export async function expectClean(s: PaymentStack): Promise<void> {
  const report = await reconciliation(s);
  expect(report.mismatches).toEqual([]);
  expect(report).toMatchObject({ ok: true, pending: 0, pending_orders: [] });
  expect(report.statuses).toEqual({ PAID: 2, FAILED: 1, CANCELLED: 1, REFUNDED: 1, CREATED: 1 });
  expect(report.totals).toEqual({
    channel_net: 2 * PRICE,
    wallet_net: 0,
    paid_sum: 2 * PRICE,
    confirmed: 2,
    paid: 2,
    drift: 0,
  });
  expect(report.events).toEqual({
    paid_without_event: 0,
    terminal_without_event: 0,
    duplicate_shipments: 0,
    shipped_without_paid: 0,
    lines_disagree: 0,
    pending: 0,
    dead: 0,
  });
}

/** `order_id class` pairs, sorted: the exact set a report names. */
export function named(mismatches: ReadonlyArray<{ order_id: string; class: string }>): string[] {
  return mismatches.map((m) => `${m.order_id} ${m.class}`).sort();
}
