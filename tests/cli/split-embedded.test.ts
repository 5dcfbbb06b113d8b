import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { BIN, waitForExit } from '../support/process.ts';
import { TEST_EVENTS_SECRET, TEST_JWT_SECRET, TEST_NOTIFY_SECRET } from '../support/stack.ts';

// `flashpay inventory` with FLASHPAY_STOCK_SERVICE=separate and no database named anywhere: it
// starts an embedded cluster of its own (never the shops' DATABASE_URL) and serves the SKU routes.
describe('flashpay inventory on its own embedded cluster', () => {
  it('SP-04 no --database-url, no FLASHPAY_STOCK_DATABASE_URL: its own cluster under the data directory; a SKU written there is read back; SIGTERM stops it cleanly', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-inv-'));
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.DATABASE_URL;
    delete env.FLASHPAY_STOCK_DATABASE_URL;
    Object.assign(env, {
      FLASHPAY_STOCK_SERVICE: 'separate',
      FLASHPAY_DATA_DIR: dir,
      FLASHPAY_JWT_SECRET: TEST_JWT_SECRET,
      FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
      FLASHPAY_EVENTS_SECRET: TEST_EVENTS_SECRET,
      FLASHPAY_LOG_LEVEL: 'warn',
    });
    const child = spawn(process.execPath, [BIN, 'inventory', '--port', '0'], {
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`flashpay inventory did not come up:\n${err}`)), 60_000);
        child.stdout?.on('data', (c: Buffer) => {
          out += c.toString();
          const line = out.split('\n').find((l) => l.startsWith('{"inventory"'));
          if (line) {
            clearTimeout(timer);
            resolve((JSON.parse(line) as { inventory: string }).inventory);
          }
        });
        child.once('exit', (code) => reject(new Error(`flashpay inventory exited with ${code}:\n${err}`)));
      });
      const admin = await tokenSigner(TEST_JWT_SECRET).sign({ tenantId: 'emb', userId: 'ops', scope: 'admin' });
      const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
      const created = await fetch(`${url}/v1/admin/skus`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ sku: 'e1', name: 'Embedded', price: 100, stock: 7 }),
      });
      expect(created.status).toBe(201);
      const read = await fetch(`${url}/v1/admin/skus/e1`, { headers });
      expect(await read.json()).toMatchObject({ sku: 'e1', total: 7, available: 7 });
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
      expect(await waitForExit(child)).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(-child.pid, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
