import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sagaDeps } from '../../src/recovery/index.ts';
import { runSagaPass, type ProviderPayments } from '../../src/saga/index.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

type Journal = Array<{ step: string; direction: string; status: string; key: string }>;

// Seed 002 under faults: lost answers are resolved by a query before anything is compensated, and
// the negative controls (a fresh refund key per retry, compensation in forward order) are caught.
describe('compensation under faults (seed 002)', () => {
  let s: PaymentStack;
  let n = 0;
  beforeAll(async () => {
    // A pay timeout generous for a loaded machine; the lost answers below are held well past it.
    s = await startPaymentStack({ config: { payTimeoutMs: 1_000 } });
    await createSku(s, { sku: 'seat', name: 'Seat', price: 120, stock: 20 });
  });
  afterAll(async () => s.close());

  async function paidOrder() {
    const user = `f-${++n}`;
    await s.control('POST', '/_control/accounts', { customer: `${TENANT}/${user}`, balance: 500 });
    const b = await s.buy(user, 'seat');
    expect((await s.pay(b.token, b.orderId)).body.status).toBe('PAID');
    return { ...b, user };
  }
  const balance = async (user: string) =>
    ((await s.control('GET', `/_control/accounts/${encodeURIComponent(`${TENANT}/${user}`)}`)) as { balance: number })
      .balance;
  const requests = async (op: 'refund' | 'fulfil', orderId: string) =>
    ((await s.control('GET', '/_control/requests')) as Record<string, { by_order: Record<string, number> }>)[op]
      ?.by_order[orderId] ?? 0;
  const journal = async (orderId: string) => ((await s.order(orderId)) as unknown as { journal: Journal }).journal;
  const refunds = async (orderId: string) =>
    (await s.statement()).lines.filter((l) => l.merchant_order === orderId && l.type === 'REFUND').length;
  const pass = (only: string, provider?: ProviderPayments) =>
    runSagaPass({ ...sagaDeps(s.deps), ...(provider ? { provider } : {}) }, { only: [only] });

  it('S002-05 refund answer lost (DELAY_RESPONSE past the timeout): the query by refund key decides; never a second refund', async () => {
    const o = await paidOrder();
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: o.orderId });
    await s.control('POST', '/_control/faults', {
      op: 'refund',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 2_500,
    });
    await pass(o.orderId);
    const lost = await s.order(o.orderId);
    expect([lost.status, lost.reservation.status]).toEqual(['COMPENSATION_PENDING', 'CONFIRMED']);
    expect(await refunds(o.orderId)).toBe(1); // the provider did refund; we did not hear it
    await pass(o.orderId);
    const after = await s.order(o.orderId);
    expect([after.status, after.reservation.status]).toEqual(['COMPENSATED', 'RELEASED']);
    expect(await requests('refund', o.orderId)).toBe(1); // resolved by the query, not by a second refund
    expect(await refunds(o.orderId)).toBe(1);
    expect(await balance(o.user)).toBe(500);
    const undo = (await journal(o.orderId)).filter((e) => e.direction === 'undo');
    expect(undo.map((e) => [e.step, e.status, e.key])).toEqual([
      ['charge', 'UNKNOWN', `${o.orderId}/refund`],
      ['charge', 'DONE', `${o.orderId}/refund`], // what the query found
      ['reserve', 'DONE', `${o.orderId}/release`],
    ]);
  });

  it('S002-06 fulfilment answers lost or failing (ERROR_500, DELAY_RESPONSE) are retried with the same key and never compensated', async () => {
    const o = await paidOrder();
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'ERROR_500', merchant_order: o.orderId });
    await pass(o.orderId);
    expect((await s.order(o.orderId)).status).toBe('PAID');
    await s.control('POST', '/_control/faults', {
      op: 'fulfil',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 2_500,
    });
    await pass(o.orderId);
    expect((await s.order(o.orderId)).status).toBe('PAID');
    await pass(o.orderId); // the query finds the fulfilment the lost answer made
    const view = (await s.order(o.orderId)) as unknown as { status: string; fulfilment: { status: string } };
    expect([view.status, view.fulfilment.status]).toEqual(['PAID', 'FULFILLED']);
    expect(await requests('fulfil', o.orderId)).toBe(2); // the 500 and the delayed one; the third attempt was a query
    const fulfil = (await journal(o.orderId)).filter((e) => e.step === 'fulfil');
    expect(new Set(fulfil.map((e) => e.key))).toEqual(new Set([`${o.orderId}/fulfil`]));
    expect(fulfil.map((e) => e.status)).toEqual(['UNKNOWN', 'UNKNOWN', 'DONE']);
    expect(await refunds(o.orderId)).toBe(0);
  });

  it('S002-07 a runner that uses a fresh refund key per retry is kept from refunding twice only by the provider’s one-refund-per-charge rule, whose "already refunded" completes it (issue 48)', async () => {
    const o = await paidOrder();
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: o.orderId });
    await s.control('POST', '/_control/faults', {
      op: 'refund',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 2_500,
    });
    const real = sagaDeps(s.deps).provider;
    let attempt = 0;
    const freshKeys: ProviderPayments = {
      refund: (mo, key, amount) => real.refund(mo, `${key}#${++attempt}`, amount),
      query: async () => ({ kind: 'UNKNOWN', reason: 'this runner never asks' }),
    };
    await pass(o.orderId, freshKeys);
    const unknown = await s.order(o.orderId);
    expect([unknown.status, unknown.reservation.status]).toEqual(['COMPENSATION_PENDING', 'CONFIRMED']);
    // The second key's refund is a second refund request: the provider answers "already refunded"
    // (its one-refund-per-charge rule), which is the refund done (issue 48), not a refusal.
    await pass(o.orderId, freshKeys);
    expect((await s.order(o.orderId)).status).toBe('COMPENSATED');
    expect(
      (await journal(o.orderId)).filter((e) => e.direction === 'undo' && e.step === 'charge').at(-1),
    ).toMatchObject({
      status: 'DONE',
    });
    expect(await refunds(o.orderId)).toBe(1); // the provider's one-refund-per-charge rule is all that kept it from paying twice
    expect(attempt).toBe(2);
  });

  it('S002-14 a compensation stuck past its deadline is listed at GET /v1/admin/attention (own tenant, admins only) and counted in the metrics', async () => {
    const o = await paidOrder();
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: o.orderId });
    await s.control('POST', '/_control/faults', {
      op: 'refund',
      kind: 'ERROR_500',
      merchant_order: o.orderId,
      times: 5,
    });
    await runSagaPass({ ...sagaDeps(s.deps), deadlineMs: 1 }, { only: [o.orderId] });
    s.clock.advance(10);
    await pass(o.orderId);
    const listed = await s.call('GET', '/v1/admin/attention', { token: s.admin });
    expect(listed.status).toBe(200);
    expect(listed.body.orders).toContainEqual(
      expect.objectContaining({
        order_id: o.orderId,
        status: 'COMPENSATION_PENDING',
        reason: expect.stringContaining('past its deadline'),
      }),
    );
    const other = await s.call('GET', '/v1/admin/attention', { token: await s.token('tenant-b', 'ops', 'admin') });
    expect(other.body.orders.map((x: { order_id: string }) => x.order_id)).not.toContain(o.orderId);
    expect((await s.call('GET', '/v1/admin/attention', { token: o.token })).status).toBe(403);
    const metrics = await s.call('GET', '/metrics', { token: s.operator });
    expect(metrics.text).toMatch(/flashpay_compensations_started_total \d+/);
    expect(metrics.text).toMatch(/flashpay_compensations_pending [1-9]/);
  });

  it('S002-08 negative control: compensating in forward order (release, then refund) with the refund down is caught by reconciliation as COMPENSATED_MONEY_KEPT', async () => {
    const o = await paidOrder();
    // A flow whose journal lists the charge before the unit: reverse order then releases first.
    await s.db.pool.query(
      `INSERT INTO sagas (saga_id, flow, state, next_attempt_at, deadline_at, started_at, updated_at) VALUES ($1, 'order-after-paid', 'FORWARD', $2, $3, $2, $2)`,
      [o.orderId, s.clock.now(), new Date(s.clock.now().getTime() + 86_400_000)],
    );
    await s.db.pool.query(
      `INSERT INTO saga_journal (saga_id, step, direction, key, status, at) VALUES ($1, 'charge', 'do', $1, 'DONE', $2), ($1, 'reserve', 'do', $1 || '/r1', 'DONE', $2)`,
      [o.orderId, s.clock.now()],
    );
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: o.orderId });
    await s.control('POST', '/_control/faults', { op: 'refund', kind: 'ERROR_500', merchant_order: o.orderId });
    await pass(o.orderId);
    expect((await s.order(o.orderId)).status).toBe('COMPENSATED');
    const report = await s.call('GET', '/v1/admin/reconciliation', { token: s.admin });
    expect(report.body.mismatches).toContainEqual(
      expect.objectContaining({ order_id: o.orderId, class: 'COMPENSATED_MONEY_KEPT' }),
    );
    // Repair for the rest of the file: the refund goes through on the next pass.
    await pass(o.orderId);
    expect(await refunds(o.orderId)).toBe(1);
    expect(await skuCounters(s, 'seat')).toMatchObject({ held: 0 });
  });
});
