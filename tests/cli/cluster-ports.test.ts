import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEngines, clusterDown } from '../../src/cluster/index.ts';
import { BIN } from '../support/process.ts';

// Issue 52: `flashpay cluster up --port-base N` puts the cluster's listeners on N, N+1, … instead
// of kernel-picked ports (a firewall rule, a bookmark, a second cluster beside it). A bad N is a
// usage error; a taken port in the range is refused before any node starts. CP-03, a whole cluster
// on its base, is in the cluster suite (tests/cluster/port-base.test.ts): it takes a minute.

// With --api 1 --nats 0: the monitor and two PostgreSQL nodes, the channel, the worker, HAProxy, one API.
const PORTS_NEEDED = 7;

function runCli(args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** A base whose PORTS_NEEDED ports are all free now, from a range the kernel does not hand out. */
async function freeRange(): Promise<number> {
  for (let base = 21_000 + Math.floor(Math.random() * 200) * 20; base < 30_000; base += 20) {
    const all = await Promise.all(Array.from({ length: PORTS_NEEDED }, (_, i) => isFree(base + i)));
    if (all.every(Boolean)) return base;
  }
  throw new Error('no free range of ports between 21000 and 30000');
}

// The engines are installed wherever the suite runs the cluster tests (FLASHPAY_REQUIRE_CLUSTER=1 fails without them).
let engines = true;
try {
  checkEngines(0);
} catch (error) {
  if (process.env.FLASHPAY_REQUIRE_CLUSTER === '1') throw error;
  engines = false;
}

describe('flashpay cluster up --port-base (CP, issue 52)', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-cp-'));
    await chmod(dir, 0o755); // the postgres user must reach it
  });
  afterAll(async () => {
    await clusterDown(dir).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('CP-01: a port base that is not an unprivileged port with room above it is a usage error; nothing starts', async () => {
    for (const bad of ['80', 'abc', '65100', '-1']) {
      const r = await runCli(['cluster', 'up', '--dir', dir, '--port-base', bad]);
      expect([bad, r.code, r.stdout]).toEqual([bad, 2, '']);
      expect(r.stderr).toMatch(/--port-base must be|must be a non-negative integer/);
    }
    expect(await readdir(dir)).toEqual([]);
  }, 60_000);

  it.skipIf(!engines)(
    'CP-02: a taken port in the range is refused by name before any node starts (exit 1)',
    async () => {
      const base = await freeRange();
      const holder = net.createServer();
      await new Promise<void>((resolve) => holder.listen(base + 3, '127.0.0.1', resolve));
      try {
        const r = await runCli([
          'cluster',
          'up',
          '--dir',
          dir,
          '--api',
          '1',
          '--nats',
          '0',
          '--port-base',
          String(base),
        ]);
        expect([r.code, r.stdout]).toEqual([1, '']);
        expect(r.stderr).toContain(`--port-base ${base}: port ${base + 3} is in use`);
        const status = await runCli(['cluster', 'status', '--dir', dir, '--json']);
        expect(status.code === 0 ? (JSON.parse(status.stdout) as { nodes: unknown[] }).nodes : []).toEqual([]);
      } finally {
        await new Promise((resolve) => holder.close(resolve));
      }
    },
    120_000,
  );
});
