import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/platform/embedded.ts';
import { BIN, spawnStart, waitForExit } from '../support/process.ts';

// Issue 52: FLASHPAY_PG_PORT chooses the port of the embedded PostgreSQL a command starts (so a
// psql or a GUI can be pointed at it); unset, a free one. A bad value or a taken port is refused
// (exit 2) before anything is started.

function runCli(cwd: string, env: NodeJS.ProcessEnv, args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('FLASHPAY_PG_PORT (PP, issue 52)', () => {
  let dir = '';
  let env: NodeJS.ProcessEnv = {};
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-pp-'));
    env = { ...process.env, FLASHPAY_DATA_DIR: path.join(dir, '.flashpay'), FLASHPAY_LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('PP-01: a value that is not a port is refused, exit 2, before anything is made', async () => {
    for (const bad of ['abc', '0', '65536', '-5', '5432x', '54.32']) {
      const r = await runCli(dir, { ...env, FLASHPAY_PG_PORT: bad }, ['migrate']);
      expect([bad, r.code, r.stderr.trim()]).toEqual([
        bad,
        2,
        `FLASHPAY_PG_PORT must be a port number, 1..65535; got "${bad}"`,
      ]);
    }
    expect(await readdir(dir)).toEqual([]);
  }, 120_000);

  it('PP-02: a port in use is refused, exit 2, and no cluster is initialised', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const r = await runCli(dir, { ...env, FLASHPAY_PG_PORT: String(port) }, ['migrate']);
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(`FLASHPAY_PG_PORT=${port} is in use`)]);
      expect(existsSync(path.join(dir, '.flashpay', 'pg', 'PG_VERSION'))).toBe(false);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 120_000);

  it('PP-03: flashpay start’s embedded PostgreSQL listens on the port asked for', async () => {
    const port = await freePort();
    const started = await spawnStart(dir, { ...env, FLASHPAY_PG_PORT: String(port) });
    try {
      const runtime = JSON.parse(await readFile(path.join(dir, '.flashpay', 'runtime.json'), 'utf8')) as {
        databaseUrl: string;
      };
      expect(new URL(runtime.databaseUrl).port).toBe(String(port));
      const client = new pg.Client({ connectionString: runtime.databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ port: string }>('SHOW port');
        expect(rows[0]?.port).toBe(String(port));
      } finally {
        await client.end();
      }
    } finally {
      if (started.child.pid) process.kill(-started.child.pid, 'SIGTERM');
      await waitForExit(started.child);
    }
  }, 180_000);
});
