import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEngines, clusterDown } from '../../src/cluster/index.ts';
import { BIN } from '../support/process.ts';

// Issue 52, CP-03 (CP-01/02, the refusals, are in tests/cli/cluster-ports.test.ts): `flashpay cluster
// up --port-base N` puts every listener of the cluster on N, N+1, … instead of kernel-picked ports.

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

describe('flashpay cluster up --port-base (CP-03, issue 52)', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-cp-'));
    await chmod(dir, 0o755); // the postgres user must reach it
  });
  afterAll(async () => {
    await clusterDown(dir).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it.skipIf(!engines)(
    'CP-03: every listener of the cluster is on a port from the base upward',
    async () => {
      const base = await freeRange();
      const up = await runCli([
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
        '--json',
      ]);
      expect(up.code, up.stderr).toBe(0);
      const state = JSON.parse(up.stdout) as {
        api: string;
        channel: string;
        nodes: Array<{ name: string; url: string }>;
      };
      const portOf = (url: string) => Number(/:(\d+)(?:\/|$)/.exec(url)?.[1]);
      const ports = [state.api, state.channel, ...state.nodes.map((n) => n.url)].map(portOf);
      expect(
        ports.every((p) => p >= base && p < base + PORTS_NEEDED),
        JSON.stringify(state.nodes),
      ).toBe(true);
      expect(new Set(state.nodes.map((n) => portOf(n.url))).size).toBe(state.nodes.length);
      const down = await runCli(['cluster', 'down', '--dir', dir]);
      expect(down.code, down.stderr).toBe(0);
    },
    300_000,
  );
});
