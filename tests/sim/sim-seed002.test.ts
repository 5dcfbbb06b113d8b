import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/db.ts';
import { BIN } from '../support/process.ts';
import { SIM_CONTROL_TOKEN } from './run-sim.ts';

describe('flashpay sim --scenario seed-002', () => {
  it("S002-09 prints the seed's five facts and exits 0 with a clean reconciliation", async () => {
    // Proves the seed's own run, as a user would start it, holds end to end over HTTP.
    const db = await freshDatabase({ poolSize: 1 });
    const child = spawn(process.execPath, [BIN, 'sim', '--scenario', 'seed-002'], {
      // With the double's control token set (issue 38): exit 1 before the sim sent it.
      env: { ...process.env, DATABASE_URL: db.url, FLASHPAY_POOL_SIZE: '4', FLASHPAY_CONTROL_TOKEN: SIM_CONTROL_TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    await db.drop();
    expect(code, `${out}\n${err}`).toBe(0);
    expect(out.split('\n').slice(0, 5)).toEqual([
      'after the duplicate booking: units=1 balance=380',
      'fulfilment failed (REFUSED): compensating in reverse — refund first, then release',
      'refund unavailable: COMPENSATION_PENDING units=1 balance=380',
      'after recovery: COMPENSATED units=2 balance=500',
      'after a repeated compensation: units=2 balance=500',
    ]);
    expect(out).toContain('mismatches=0 pending=0');
  });
});
