import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { checkEngines, clusterDown } from '../../src/cluster/index.ts';
import { BIN } from './process.ts';

// What the `cluster up --port-base` tests share (tests/cli/cluster-ports.test.ts CP-01/02 and the
// cluster suite's tests/cluster/port-base.test.ts CP-03, issue 52).

/** With --api 1 --nats 0: the monitor and two PostgreSQL nodes, the channel, the worker, HAProxy, one API. */
export const PORTS_NEEDED = 7;

/** `flashpay ARGS` as an operator runs it: its exit code and output. */
export function runCli(args: string[]) {
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
export async function freeRange(): Promise<number> {
  for (let base = 21_000 + Math.floor(Math.random() * 200) * 20; base < 30_000; base += 20) {
    const all = await Promise.all(Array.from({ length: PORTS_NEEDED }, (_, i) => isFree(base + i)));
    if (all.every(Boolean)) return base;
  }
  throw new Error('no free range of ports between 21000 and 30000');
}

/** Whether the cluster's engines are here; with FLASHPAY_REQUIRE_CLUSTER=1 their absence fails instead. */
export function clusterEngines(): boolean {
  try {
    checkEngines(0);
    return true;
  } catch (error) {
    if (process.env.FLASHPAY_REQUIRE_CLUSTER === '1') throw error;
    return false;
  }
}

/** A cluster folder the postgres user reaches, brought down and removed after the file. */
export function clusterFolder(): () => string {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-cp-'));
    await chmod(dir, 0o755); // the postgres user must reach it
  });
  afterAll(async () => {
    await clusterDown(dir).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });
  return () => dir;
}
