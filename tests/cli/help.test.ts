import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../support/process.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Issue 40 (CH-01..03): asking a command for help acts on nothing. `recover --help`,
// `migrate --help` and `reconcile --help` ran the real action. Every command's database and
// provider point at a listener that counts connections, and the data directory must stay empty:
// help prints usage and exits 0 having touched neither; an unknown flag is exit 2, just as inert.
// The commands are read from `flashpay --help` itself, so a command added later is covered.
const URGENT = ['migrate', 'reconcile', 'recover'];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('flashpay <command> --help starts nothing (CONTRACT "Command line habits")', () => {
  let listener: net.Server;
  let connections = 0;
  let dataDir = '';
  let empty: TestDatabase;
  let target = '';

  beforeAll(async () => {
    // Accepts and drops at once: a command that tried to act fails fast, and is counted.
    listener = net.createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as net.AddressInfo).port;
    target = `127.0.0.1:${port}`;
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-help-'));
    empty = await freshDatabase({ migrated: false, poolSize: 1 });
  });
  afterAll(async () => {
    await new Promise((resolve) => listener.close(resolve));
    await rm(dataDir, { recursive: true, force: true });
    await empty.drop();
  });

  const run = (args: string[], databaseUrl = `postgres://flashpay:x@${target}/flashpay`) =>
    new Promise<Run>((resolve, reject) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: databaseUrl,
        FLASHPAY_CHANNEL_URL: `http://${target}`,
        FLASHPAY_STOCK_DATABASE_URL: `postgres://flashpay:x@${target}/stock`,
        FLASHPAY_DATA_DIR: dataDir,
        FLASHPAY_PORT: '0',
      };
      const child = spawn(process.execPath, [BIN, ...args], { cwd: dataDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('error', reject);
      // A command that started something anyway is stopped, and fails below on its exit code.
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });

  it('CH-01: every command, --help and -h: usage on stdout, exit 0, no connection, no file', async () => {
    const top = await run(['--help']);
    const commands = [...top.stdout.matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1]!);
    expect([top.code, commands]).toEqual([0, expect.arrayContaining([...URGENT, 'start', 'token'])]);
    // Four at a time: each is a Node process compiling TypeScript on a shared machine.
    const runs: Array<Run & { command: string; flag: string }> = [];
    const asks = commands.flatMap((command) => ['--help', '-h'].map((flag) => ({ command, flag })));
    for (let i = 0; i < asks.length; i += 4)
      runs.push(
        ...(await Promise.all(asks.slice(i, i + 4).map(async (a) => ({ ...a, ...(await run([a.command, a.flag])) })))),
      );
    for (const r of runs) {
      expect([r.command, r.flag, r.code, r.stderr]).toEqual([r.command, r.flag, 0, '']);
      expect(r.stdout).toMatch(new RegExp(`^usage: flashpay ${r.command}\\b`));
    }
    // Also after other flags: `recover --json --help` is still only a question.
    const late = await run(['recover', '--json', '--stale-after-ms', '0', '--help']);
    expect([late.code, late.stdout]).toEqual([0, expect.stringMatching(/^usage: flashpay recover/)]);
    expect(connections).toBe(0);
    expect(await readdir(dataDir)).toEqual([]);
  }, 300_000);

  it('CH-02: migrate --help on an empty database creates nothing; migrate itself does (the control)', async () => {
    const tables = async () =>
      (
        await empty.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'",
        )
      ).rows[0]!.n;
    const help = await run(['migrate', '--help'], empty.url);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: flashpay migrate\n/)]);
    expect(await tables()).toBe(0);
    const real = await run(['migrate'], empty.url);
    expect(real.code, real.stderr).toBe(0);
    expect(await tables()).toBeGreaterThan(10);
  }, 120_000);

  it('CH-03: an unknown flag or a stray argument is a usage error (exit 2) that acts on nothing', async () => {
    const cases = [
      ['recover', '--stale-after', '0'],
      ['recover', '--stale-after-ms', 'soon'],
      ['migrate', '--dry-run'],
      ['reconcile', '--jsno'],
      ['token', '--tenant', 'acme', '--user', 'alice', '--admn'],
      ['recover', 'now'],
    ];
    for (const args of cases) {
      const r = await run(args);
      expect([args, r.code]).toEqual([args, 2]);
      expect(r.stderr).toMatch(/unexpected|must be/);
      expect(r.stdout).toBe('');
    }
    expect(connections).toBe(0);
    expect(await readdir(dataDir)).toEqual([]);
  }, 120_000);
});
