import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { withDatabase } from '../../src/platform/embedded.ts';
import { client } from './support.ts';

const FIXTURE = path.resolve(import.meta.dirname, 'fixtures/run-channel.ts');

async function runChannel(args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = createInterface({ input: child.stdout! });
  const [first] = (await once(lines, 'line', { signal: AbortSignal.timeout(15_000) })) as [string];
  return { child, url: (JSON.parse(first) as { channel: string }).channel };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  return code;
}

describe('flashpay channel (command line)', () => {
  // A name in the run's namespace, so global teardown drops it even if this file crashes.
  const database = `t_${inject('templateDb').split('_').pop()}_cli_${randomBytes(4).toString('hex')}`;
  const databaseUrl = withDatabase(inject('serverUrl'), database);

  afterAll(async () => {
    const admin = new pg.Client({ connectionString: inject('serverUrl') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it('runs on a free port with --control, keeps its ledger in --database-url across restarts, and exits 0 on SIGTERM', async () => {
    // Proves the standalone product: it creates its own database and tables, and a restart loses no charge.
    const env = {
      FLASHPAY_NOTIFY_SECRET: 'cli-notify-secret-of-at-least-32-bytes-long',
      FLASHPAY_DATA_DIR: await mkdtemp(path.join(os.tmpdir(), 'flashpay-cli-')),
    };
    const args = ['--port', '0', '--control', '--database-url', databaseUrl];
    const first = await runChannel(args, env);
    const charged = await client(first.url).charge('cli-1', 1234);
    expect(charged.body.result).toBe('CHARGED');
    expect((await client(first.url).get('/_control/requests')).body.charge.total).toBe(1);
    expect(await stop(first.child)).toBe(0);

    const second = await runChannel(args, env);
    expect((await client(second.url).query('cli-1')).body).toMatchObject({ status: 'CHARGED', txn: charged.body.txn });
    expect(await stop(second.child)).toBe(0);
  });

  it('runs in memory without control by default, and refuses unknown flags', async () => {
    // Proves the defaults: no database, no scripting API; and a typo is an error, not ignored.
    const env = {
      FLASHPAY_NOTIFY_SECRET: 'cli-notify-secret-of-at-least-32-bytes-long',
      FLASHPAY_CHANNEL_DATABASE_URL: '',
    };
    const { child, url } = await runChannel(['--port', '0'], env);
    expect((await client(url).charge('cli-mem', 5)).body.result).toBe('CHARGED');
    expect((await client(url).get('/_control/requests')).status).toBe(404);
    expect(await stop(child)).toBe(0);

    const bad = spawn(process.execPath, ['--import', 'tsx', FIXTURE, '--prot', '1'], { stdio: 'ignore' });
    const [code] = (await once(bad, 'exit')) as [number | null];
    expect(code).not.toBe(0);
  });
});
