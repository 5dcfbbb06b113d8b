import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPool } from '../../src/platform/db.ts';
import { ensureDatabase, freePort, startEmbedded, type EmbeddedCluster } from '../../src/platform/embedded.ts';
import { migrate } from '../../src/platform/migrate.ts';
import type { TestDatabase } from '../support/db.ts';
import { startFaultStack, type FaultStack } from './support.ts';
import { RESTART_STACK_ENV, serverRestartUnderLoad } from './restart.ts';

// Proves the process rides out its PostgreSQL server going away and coming back (a restart of the
// server itself, on its own address): while it is away requests get a quick 503 with Retry-After
// and /readyz is red; when it is back everything resumes by itself and reconciles clean.
describe('database fault: the PostgreSQL server restarts under load', () => {
  let dir = '';
  let port = 0;
  let cluster: EmbeddedCluster | undefined;
  let s: FaultStack;
  const boot = async () => {
    cluster = await startEmbedded({ dataDir: path.join(dir, 'pg'), persistent: true, port });
    return cluster;
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-restart-'));
    port = await freePort();
    const server = await boot();
    await ensureDatabase(server.url('postgres'), 'svc');
    const url = server.url('svc');
    await migrate(url);
    const pool = createPool(url, 2);
    const db: TestDatabase = { url, name: 'svc', pool, drop: () => pool.end() };
    s = await startFaultStack({ db, env: RESTART_STACK_ENV });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('F-02: server stopped and started again: quick 503s and a red /readyz while away, then it resumes', async () => {
    await serverRestartUnderLoad(s, {
      interrupt: async () => {
        await cluster?.stop();
        cluster = undefined;
      },
      restore: async () => {
        if (!cluster) await boot();
      },
      awayBetween: true,
    });
  }, 150_000);
});
