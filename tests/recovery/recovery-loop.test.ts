import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recoveryLoop } from '../../src/workers.ts';
import { createSku, eventually, startPaymentStack, type PaymentStack } from '../support/payments.ts';

// The recovery loop of `flashpay start` runs its first pass when it starts: a process restarted
// after a crash converges the orders the crash left UNKNOWN at once, not one interval later.
describe('the recovery loop at start', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: 150 } });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  it('RL-01 an order left UNKNOWN is PAID within seconds of the loop starting, with an interval of a minute', async () => {
    await createSku(s, { sku: 'rl1', stock: 2 });
    const o = await s.buy('rl1-user', 'rl1');
    // The charge goes through after the pay stopped waiting: UNKNOWN, and nothing else will tell us.
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', ms: 400, times: 1 });
    await s.pay(o.token, o.orderId);
    expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
    const startedAt = Date.now();
    const loop = recoveryLoop(
      { ...s.deps, config: { ...s.deps.config, recoveryIntervalMs: 60_000, staleAfterMs: 0 } },
      () => undefined,
    );
    try {
      await eventually(
        async () => (await s.order(o.orderId)).status,
        (status) => status === 'PAID',
        10_000,
      );
    } finally {
      await loop.stop();
    }
    expect(Date.now() - startedAt).toBeLessThan(10_000);
  });
});
