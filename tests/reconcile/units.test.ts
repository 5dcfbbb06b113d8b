import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { createSku, skuCounters } from '../support/fixtures.ts';
import { PAY_TIMEOUT_MS } from './cases.support.ts';
import { payAndShip, refundShipped, UNIT_CASES } from './cases.units.ts';
import { buildConverged, drain, expectClean, GLOBAL, named, reconciliation, PRICE } from './scenario.ts';

// Issue 48: reconciliation's units rules (src/reconcile/reconcile.units.ts). The positive control:
// shipped units refunded, kept out, returned, sold and shipped again reconcile clean. Then each
// rule's negative control (cases.units.ts) in a converged world of its own.

const STACK = { config: { payTimeoutMs: PAY_TIMEOUT_MS } };

describe('issue 48: reconciliation of shipped units', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack(STACK);
  });
  afterAll(async () => s?.close());

  it('UR-01: refunded after shipping, kept out, returned, resold and shipped again: clean at every step', async () => {
    // Proves the rules accept everything the real code does: they fire on faults only.
    await createSku(s, { sku: 'ur1', stock: 1, price: PRICE });
    const alice = await payAndShip(s, 'ur-alice', 'ur1');
    const clean = async () => {
      await drain(s);
      const report = await reconciliation(s);
      expect(report.mismatches).toEqual([]);
      expect(report.ok).toBe(true);
    };
    await clean();
    await refundShipped(s, alice);
    expect(await skuCounters(s, 'ur1')).toMatchObject({ available: 0, refunded_shipped: 1 });
    await clean();
    const back = await s.call('POST', `/v1/admin/orders/${alice}/return`, {
      token: s.admin,
      headers: { 'idempotency-key': 'ur1-return' },
      body: { reason: 'came back sealed' },
    });
    expect(back.status).toBe(200);
    await clean();
    await payAndShip(s, 'ur-bob', 'ur1');
    expect(await skuCounters(s, 'ur1')).toMatchObject({ available: 0, confirmed: 1, refunded_shipped: 0 });
    await clean();
  });
});

describe('issue 48: each units rule can fire', () => {
  for (const c of UNIT_CASES)
    it.concurrent(`${c.proves}: ${c.title}`, async () => {
      // Proves the checker reports this planted state as exactly the listed mismatches, nothing more.
      const s = await startPaymentStack(STACK);
      try {
        const scenario = await buildConverged(s);
        await expectClean(s);
        const expected = await c.plant(s, scenario);
        expect(expected.map(([, mismatch]) => mismatch)).toContain(c.proves);
        await drain(s);
        const report = await reconciliation(s);
        expect(named(report.mismatches)).toEqual(
          named(expected.map(([order_id, mismatch]) => ({ order_id, class: mismatch }))),
        );
        expect(report.ok).toBe(false);
        for (const [orderId, mismatch, detail] of expected)
          if (detail !== undefined)
            expect(report.mismatches.find((m) => m.order_id === orderId && m.class === mismatch)?.detail).toContain(
              detail,
            );
        if (c.repair) {
          await c.repair(s, scenario);
          await drain(s);
          expect((await reconciliation(s)).mismatches.filter((m) => m.order_id === GLOBAL)).toEqual([]);
        }
      } finally {
        await s.close();
      }
    });
});
