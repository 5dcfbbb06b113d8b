import { describe, expect, it } from 'vitest';
import { channelClient } from '../../src/payments/channel.client.ts';
import { reconcile } from '../../src/reconcile/reconcile.service.ts';
import type { MismatchClass } from '../../src/reconcile/reconcile.rules.ts';
import { createSku, startPaymentStack } from '../support/payments.ts';

// The rules that compare database facts with each other only. The ones that compare the database
// with the provider's statement cannot be read in one snapshot with it, and are judged on a quiet
// system (docs/reconciliation.md, "When to run it").
const DATABASE_ONLY: ReadonlySet<MismatchClass> = new Set([
  'CONFIRMED_NE_PAID',
  'STOCK_NOT_CONSERVED',
  'PAID_WITHOUT_EVENT',
  'DUPLICATE_SHIPMENT',
  'DEAD_EVENT',
]);
const BUYERS = 6;
const ORDERS_PER_BUYER = 20;
// Traffic goes on until the checker has run this often alongside it (bounded by MAX_ORDERS_PER_BUYER):
// how many passes fit in 120 orders depends on the machine and on how fast a pay commits.
const CHECKER_RUNS = 50;
const MAX_ORDERS_PER_BUYER = 200;

describe('reconciliation during live traffic', () => {
  it('never invents a database-side mismatch while payments commit between its reads', async () => {
    // Proves the database facts are read in one snapshot: counted in separate ones, a PAID that
    // commits between "count CONFIRMED" and "count PAID" reads as confirmed != paid out of nothing.
    const s = await startPaymentStack();
    try {
      await createSku(s, { sku: 'live', stock: BUYERS * MAX_ORDERS_PER_BUYER });
      const channel = channelClient(s.channel.url, 5_000);
      const invented: string[] = [];
      let runs = 0;
      let trafficDone = false;
      const checker = (async () => {
        while (!trafficDone) {
          const report = await reconcile(s.db.pool, channel);
          runs++;
          for (const m of report.mismatches) if (DATABASE_ONLY.has(m.class)) invented.push(`${m.class} ${m.detail}`);
        }
      })();
      try {
        await Promise.all(
          Array.from({ length: BUYERS }, async (_, buyer) => {
            for (let i = 0; i < MAX_ORDERS_PER_BUYER && (i < ORDERS_PER_BUYER || runs < CHECKER_RUNS); i++) {
              const bought = await s.buy(`live-${buyer}-${i}`, 'live');
              expect((await s.pay(bought.token, bought.orderId)).body.status).toBe('PAID');
            }
          }),
        );
      } finally {
        trafficDone = true;
        await checker;
      }
      expect(runs).toBeGreaterThanOrEqual(CHECKER_RUNS); // the checker really ran alongside the traffic
      expect(invented).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
