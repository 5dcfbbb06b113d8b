import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sagaDeps } from '../../src/recovery/index.ts';
import { runSagaPass } from '../../src/saga/index.ts';
import { killHard, runUntil } from '../support/child.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

type Journal = Array<{ step: string; direction: string; status: string; key: string }>;

// kill -9 at every step boundary of the after-PAID flow: a real process runs the saga and dies at
// a named fault point; a fresh runner then completes it. Each external call was made with the same
// key, nothing was refunded twice, and no unit was released before its refund.
describe('compensation survives kill -9 at every step boundary (seed 002)', () => {
  let s: PaymentStack;
  let n = 0;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: 2_000 } }); // no lost answers here: generous for a loaded machine
    await createSku(s, { sku: 'k9', name: 'Seat', price: 120, stock: 10 });
  });
  afterAll(async () => s.close());

  async function refusedOrder() {
    const user = `k9-${++n}`;
    await s.control('POST', '/_control/accounts', { customer: `${TENANT}/${user}`, balance: 500 });
    const b = await s.buy(user, 'k9');
    expect((await s.pay(b.token, b.orderId)).body.status).toBe('PAID');
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: b.orderId });
    return { ...b, user };
  }
  const requests = async (op: 'refund' | 'fulfil', orderId: string) =>
    ((await s.control('GET', '/_control/requests')) as Record<string, { by_order: Record<string, number> }>)[op]
      ?.by_order[orderId] ?? 0;
  const refunds = async (orderId: string) =>
    (await s.statement()).lines.filter((l) => l.merchant_order === orderId && l.type === 'REFUND').length;
  const balance = async (user: string) =>
    ((await s.control('GET', `/_control/accounts/${encodeURIComponent(`${TENANT}/${user}`)}`)) as { balance: number })
      .balance;

  async function dieAt(point: string, orderId: string): Promise<void> {
    const child = await runUntil('saga-process.ts', [s.db.url, s.channel.url, orderId], `STAGE ${point}`, {
      FLASHPAY_FAULTPOINT: point,
    });
    expect(await killHard(child)).toBe('SIGKILL');
  }

  async function restartAndFinish(orderId: string, user: string): Promise<Journal> {
    s.clock.set(new Date(Date.now() + 60_000)); // past the dead runner's claim
    await runSagaPass(sagaDeps(s.deps), { only: [orderId] });
    const view = await s.order(orderId);
    expect([view.status, view.reservation.status]).toEqual(['COMPENSATED', 'RELEASED']);
    expect(await refunds(orderId)).toBe(1);
    expect(await balance(user)).toBe(500);
    const journal = (view as unknown as { journal: Journal }).journal;
    for (const step of ['fulfil', 'charge', 'reserve'])
      expect(
        new Set(
          journal
            .filter((e) => e.step === step && e.direction === (step === 'fulfil' ? 'do' : 'undo'))
            .map((e) => e.key),
        ).size,
      ).toBeLessThanOrEqual(1);
    expect(journal.filter((e) => e.direction === 'undo' && e.status === 'DONE').map((e) => e.step)).toEqual([
      'charge',
      'reserve',
    ]);
    return journal;
  }

  it('S002-11 killed after the fulfil call, before its answer is journalled: the restart asks by key, then compensates', async () => {
    const o = await refusedOrder();
    await dieAt('saga.after-fulfil-call', o.orderId);
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['PAID', 'CONFIRMED']);
    const journal = await restartAndFinish(o.orderId, o.user);
    expect(journal.filter((e) => e.step === 'fulfil').map((e) => e.status)).toEqual(['STARTED', 'REFUSED']);
    expect(await requests('fulfil', o.orderId)).toBe(1); // resolved by the query, not a second fulfil
  });

  it('S002-12 killed after the refund call, before its journal row: the restart finds the refund by query; never a second refund', async () => {
    const o = await refusedOrder();
    await dieAt('saga.after-refund-call', o.orderId);
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['COMPENSATING', 'CONFIRMED']); // refunded at the provider, unit not yet released
    expect(await refunds(o.orderId)).toBe(1);
    await restartAndFinish(o.orderId, o.user);
    expect(await requests('refund', o.orderId)).toBe(1);
  });

  it('S002-13 killed between the refund and the release: the restart releases the unit once', async () => {
    const o = await refusedOrder();
    await dieAt('saga.between-undos', o.orderId);
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['COMPENSATING', 'CONFIRMED']);
    await restartAndFinish(o.orderId, o.user);
    expect(await requests('refund', o.orderId)).toBe(1);
  });
});
