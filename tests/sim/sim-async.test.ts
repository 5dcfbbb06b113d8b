import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/db.ts';
import { BIN } from '../support/process.ts';

interface SimJson {
  ok: boolean;
  final: Record<string, number>;
  reconciliation: {
    pending: number;
    mismatches: unknown[];
    totals: { channel_net: number; wallet_net: number; paid_sum: number; paid: number; drift: number };
  };
  lines: string[];
}

/** `flashpay sim --async` as a user runs it, on a fresh database. */
async function runSim(
  seed: number,
  flags: string[],
): Promise<{ code: number | null; report: SimJson; stderr: string }> {
  const db = await freshDatabase({ poolSize: 1 });
  const env = { ...process.env, DATABASE_URL: db.url, FLASHPAY_POOL_SIZE: '6' };
  const child = spawn(process.execPath, [BIN, 'sim', '--seed', String(seed), '--json', '--async', ...flags], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  await db.drop();
  if (!out.trim()) throw new Error(`sim printed nothing (exit ${code}):\n${err}`);
  return { code, report: JSON.parse(out) as SimJson, stderr: err };
}

describe('flashpay sim --async: the seeded flash sale through the queued path (seed 004)', () => {
  it.concurrent.each([29, 1, 2, 3, 4, 5])(
    'Q-sim seed %i --async --wallet-share 0.6 --late 20: every order queued, wallets too low released, mismatches=0 pending=0',
    async (seed) => {
      // Proves the queued path (202 PENDING, stock service, RELEASING → CANCELLED) converges under every fault of the seed's mix.
      const { code, report, stderr } = await runSim(seed, ['--wallet-share', '0.6', '--late', '20']);
      expect(report.reconciliation.mismatches, stderr).toEqual([]);
      expect(report.reconciliation.pending).toBe(0);
      expect(report.reconciliation.totals.drift).toBe(0);
      expect(report.final.PAID).toBe(24);
      expect(report.final.PENDING ?? 0).toBe(0);
      expect(report.final.RELEASING ?? 0).toBe(0);
      expect(report.lines[2]).toMatch(/mismatches=0 pending=0 .*drift=0/);
      expect(code).toBe(0);
    },
    150_000,
  );
});
