import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../support/process.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { TEST_NOTIFY_SECRET } from '../support/stack.ts';

// `flashpay recover` as an operator runs it: its own process, finding the service's database and
// the provider through DATABASE_URL and FLASHPAY_CHANNEL_URL.
describe('flashpay recover (CLI)', () => {
  let s: PaymentStack;
  let dataDir = '';
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-recover-'));
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => {
    await s.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const recoverCli = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: s.db.url,
        FLASHPAY_CHANNEL_URL: s.channel.url,
        FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
        FLASHPAY_DATA_DIR: dataDir,
      };
      const child = spawn(process.execPath, [BIN, 'recover', ...args], {
        cwd: dataDir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });

  it('converges an UNKNOWN order to PAID and prints what it did and the reconciliation', async () => {
    // Proves one operator command runs the whole recovery: query, apply, reconcile.
    await createSku(s, { sku: 'cli', stock: 2 });
    const o = await s.buy('cli-user', 'cli');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 400,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    const json = await recoverCli(['--json', '--stale-after-ms', '0']);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as {
      resolved: Record<string, number>;
      pending: number;
      reconciliation: { pending: number; mismatches: unknown[] };
    };
    expect(report.resolved).toMatchObject({ PAID: 1 });
    expect(report.pending).toBe(0);
    expect(report.reconciliation.mismatches).toEqual([]);
    expect((await s.order(o.orderId)).status).toBe('PAID');
    const text = await recoverCli([]);
    expect(text.stdout).toMatch(/^examined 0; resolved \{\}; pending 0$/m);
    expect(text.stdout).toMatch(/reconcile classes=\{.*PAID=1.*\} mismatches=0 pending=0/);
  });
});
