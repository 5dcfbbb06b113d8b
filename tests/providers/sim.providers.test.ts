import { describe, expect, it } from 'vitest';
import { runSim } from '../sim/run-sim.ts';
import { LOST_REPLY_TIMEOUT_MS } from '../support/providers/index.ts';

// Issue 37: the seeded fault-injection sale (C29-13) paying through each real provider's adapter —
// its official SDK against the provider's double, which `flashpay sim` starts in its own process —
// ends as clean as with the fake channel.
describe('flashpay sim through a real provider’s adapter', () => {
  it.concurrent.each(['stripe', 'alipay'])(
    'PS-01 seed 29 through %s ends with mismatches=0 pending=0 and PAID = 24 units',
    async (provider) => {
      // The sim's own pay timeout: a reply slower than it, planned or not, is an UNKNOWN that converges.
      // Pinned to the fake channel's 300 ms for every provider: the seed's planned lost replies
      // (400–1500 ms) are lost ones only below the provider's own 10 s default.
      const { code, report, stderr } = await runSim(29, [], {
        FLASHPAY_PROVIDER: provider,
        FLASHPAY_PAY_TIMEOUT_MS: String(LOST_REPLY_TIMEOUT_MS),
      });
      // The sale paid through the provider's double, which the sim's stack started for it.
      expect(stderr).toContain(`${provider} double (development) listening`);
      expect(report.reconciliation.mismatches, stderr).toEqual([]);
      expect(report.reconciliation.pending).toBe(0);
      expect(report.final.PAID, `${JSON.stringify(report.final)}\n${report.lines.join('\n')}`).toBe(24);
      expect(report.reconciliation.totals).toMatchObject({ paid: 24, confirmed: 24, channel_net: 24 * 1990, drift: 0 });
      expect(code).toBe(0);
    },
    240_000,
  );
});
