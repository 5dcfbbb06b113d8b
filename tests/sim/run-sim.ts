import { spawn } from 'node:child_process';
import { freshDatabase } from '../support/db.ts';
import { BIN } from '../support/process.ts';

/** What `flashpay sim --json` prints. */
export interface SimJson {
  ok: boolean;
  final: Record<string, number>;
  reconciliation: {
    pending: number;
    mismatches: unknown[];
    totals: {
      channel_net: number;
      wallet_net: number;
      paid_sum: number;
      confirmed: number;
      paid: number;
      drift: number;
    };
  };
  lines: string[];
}

/**
 * The double's control token every sim test runs with (issue 38): each sim path must send it as
 * Bearer, and the double refuses its control API without it.
 */
export const SIM_CONTROL_TOKEN = 'sim-control-token-0123456789abcdef0123456789';

/** Runs `flashpay sim` as a user would, on a fresh database, and returns its exit code and JSON report. */
export async function runSim(
  seed: number,
  flags: string[] = [],
  /** More environment (FLASHPAY_PROVIDER=stripe: the sale pays through that provider's double). */
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; report: SimJson; stderr: string }> {
  const db = await freshDatabase({ poolSize: 1 });
  // Small pools: several sales run at once, and a default PostgreSQL allows only 100 connections.
  const env = {
    ...process.env,
    DATABASE_URL: db.url,
    FLASHPAY_POOL_SIZE: '6',
    FLASHPAY_CONTROL_TOKEN: SIM_CONTROL_TOKEN,
    ...extraEnv,
  };
  const child = spawn(process.execPath, [BIN, 'sim', '--seed', String(seed), '--json', ...flags], {
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
