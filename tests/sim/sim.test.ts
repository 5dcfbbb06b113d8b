import { describe, expect, it } from 'vitest';
import { planSim, SEED_SHAPE } from '../../src/sim/sim.plan.ts';
import { runSim } from './run-sim.ts';

describe('flashpay sim: the seeded fault-injection flash sale (C29-13)', () => {
  it('the same seed gives the same fault plan; another seed another plan; the seed mix is honoured', () => {
    // Proves the plan is a function of the seed alone, so a failing run can be replayed.
    expect(planSim(29, SEED_SHAPE)).toEqual(planSim(29, SEED_SHAPE));
    expect(planSim(30, SEED_SHAPE).orders.map((o) => o.fault)).not.toEqual(
      planSim(29, SEED_SHAPE).orders.map((o) => o.fault),
    );
    const faults = planSim(29, SEED_SHAPE).orders.map((o) => o.fault);
    const count = (f: string) => faults.filter((x) => x === f).length;
    expect([
      count('decline'),
      count('lost'),
      count('linger'),
      count('nopay'),
      count('expire'),
      count('normal'),
    ]).toEqual([3, 4, 3, 3, 6, 5]);
    expect(planSim(29, SEED_SHAPE).orders.filter((o) => o.refundTimeout)).toHaveLength(2);
  });

  it.concurrent.each([29, 1, 2, 3, 4, 5])(
    'seed %i ends with mismatches=0 pending=0 and PAID = 24 units',
    async (seed) => {
      // Proves that every fault of the seed's mix at once converges to a clean three-way reconciliation.
      const { code, report, stderr } = await runSim(seed);
      expect(report.reconciliation.mismatches, stderr).toEqual([]);
      expect(report.reconciliation.pending).toBe(0);
      // On a failure, the sale's own account: its final statuses and what the late buyers did.
      expect(report.final.PAID, `${JSON.stringify(report.final)}\n${report.lines.join('\n')}`).toBe(24);
      expect(report.reconciliation.totals).toMatchObject({
        paid: 24,
        confirmed: 24,
        paid_sum: 24 * 1990,
        channel_net: 24 * 1990,
        drift: 0,
      });
      expect(report.lines[2]).toMatch(/mismatches=0 pending=0 .*drift=0/);
      expect(code).toBe(0);
    },
    240_000,
  );

  it('L-09 seed 29 with --lines 3 --wallet-share 0.5: three lines per order, wallets (some too low) beside the provider, still clean', async () => {
    // Proves multi-line orders and wallet pays survive every fault of the seed's mix: mismatches=0 pending=0.
    const { code, report, stderr } = await runSim(29, ['--lines', '3', '--wallet-share', '0.5']);
    expect(report.reconciliation.mismatches, stderr).toEqual([]);
    expect(report.reconciliation.pending).toBe(0);
    expect(report.final.PAID).toBe(24);
    const t = report.reconciliation.totals;
    expect(t).toMatchObject({ paid: 24, confirmed: 72, paid_sum: 24 * 3 * 1990, drift: 0 });
    expect(t.wallet_net).toBeGreaterThan(0);
    expect(t.channel_net + t.wallet_net).toBe(t.paid_sum);
    expect(report.lines[0]).toMatch(/wallet paid [1-9]\d* refused \d+/);
    expect(code).toBe(0);
  }, 240_000);

  it('S002-10 seed 29 with refused fulfilments and failing refunds (--mix refuse=3,refundfail=2) still ends mismatches=0 pending=0', async () => {
    // Proves seed 002's compensation under the whole seed-000 fault mix: the 5 refused orders are
    // COMPENSATED (money back, unit back on sale), and everything else reconciles as before.
    const { code, report, stderr } = await runSim(29, ['--mix', 'refuse=3,refundfail=2']);
    expect(report.reconciliation.mismatches, stderr).toEqual([]);
    expect(report.reconciliation.pending).toBe(0);
    expect(report.final.COMPENSATED).toBe(5);
    expect(report.reconciliation.totals.drift).toBe(0);
    expect(code).toBe(0);
  }, 240_000);
});
