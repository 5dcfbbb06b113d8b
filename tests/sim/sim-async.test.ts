import { describe, expect, it } from 'vitest';
import { runSim } from './run-sim.ts';

describe('flashpay sim --async: the seeded flash sale through the queued path (seed 004)', () => {
  // Four seeds (the seed article's 29 and three more): each is a different plan of the same fault
  // mix, and each sale costs ~10 s of two cores; seeds 4 and 5 were dropped to keep the suite
  // under 10 minutes (`flashpay sim --async --seed N` runs any other).
  it.concurrent.each([29, 1, 2, 3])(
    'Q-sim seed %i --async --wallet-share 0.6 --late 20: every order queued, wallets too low released, mismatches=0 pending=0',
    async (seed) => {
      // Proves the queued path (202 PENDING, stock service, RELEASING → CANCELLED) converges under every fault of the seed's mix.
      const { code, report, stderr } = await runSim(seed, ['--async', '--wallet-share', '0.6', '--late', '20']);
      expect(report.reconciliation.mismatches, stderr).toEqual([]);
      expect(report.reconciliation.pending).toBe(0);
      expect(report.reconciliation.totals.drift).toBe(0);
      expect(report.final.PAID).toBe(24);
      expect(report.final.PENDING ?? 0).toBe(0);
      expect(report.final.RELEASING ?? 0).toBe(0);
      expect(report.lines[2]).toMatch(/mismatches=0 pending=0 .*drift=0/);
      expect(code).toBe(0);
    },
    240_000,
  );
});
