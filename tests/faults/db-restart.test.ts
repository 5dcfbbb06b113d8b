import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/platform/db.ts';
import { ensureDatabase, freePort, startEmbedded, type EmbeddedCluster } from '../../src/platform/embedded.ts';
import { migrate } from '../../src/platform/migrate.ts';
import type { TestDatabase } from '../support/db.ts';
import { answersGrow, startLoad } from './load.ts';
import {
  answeredMatchDatabase,
  convergeClean,
  FAULT_TENANT,
  simConverges,
  startFaultStack,
  type FaultStack,
} from './support.ts';

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
    s = await startFaultStack({ db, env: { FLASHPAY_POOL_SIZE: '8', FLASHPAY_RECOVERY_INTERVAL_MS: '500' } });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('F-02: server stopped and started again: quick 503s and a red /readyz while away, then it resumes', async () => {
    expect(
      (await s.adminCall('POST', '/v1/admin/skus', { sku: 'hot', name: 'Hot', price: 500, stock: 100_000 })).status,
    ).toBe(201);
    const load = startLoad({
      api: s.proc.api,
      signer: s.signer,
      tenant: FAULT_TENANT,
      sku: 'hot',
      workers: 8,
      deadlineMs: 15_000,
    });
    await answersGrow(load.report, 60, s.alive, undefined, s.proc.stderr);

    await cluster?.stop();
    cluster = undefined;
    const buyer = await s.signer.sign({ tenantId: FAULT_TENANT, userId: 'while-away', scope: 'buyer' });
    const started = Date.now();
    const away = await fetch(`${s.proc.api}/v1/orders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${buyer}`, 'idempotency-key': 'away-1', 'content-type': 'application/json' },
      body: '{"sku":"hot"}',
    });
    expect(Date.now() - started).toBeLessThan(6_000);
    expect([away.status, away.headers.get('retry-after'), ((await away.json()) as { code: string }).code]).toEqual([
      503,
      '1',
      'UNAVAILABLE',
    ]);
    expect((await fetch(`${s.proc.api}/readyz`)).status).toBe(503);
    expect(s.alive()).toBe(true);

    await boot();
    await answersGrow(load.report, 60, s.alive, undefined, s.proc.stderr);
    const report = await load.stop();
    expect((await fetch(`${s.proc.api}/readyz`)).status).toBe(200);
    expect(report.violations).toEqual([]);
    expect(report.unavailable).toBeGreaterThan(0);
    expect(await answeredMatchDatabase(s.db, report.created, report.paid)).toEqual([]);
    expect((await convergeClean(s)).mismatches).toEqual([]);
    // The loops said they were failing and said when they came back.
    expect(s.proc.stderr()).toMatch(/resumed after/);
    // And a seeded sale with every provider fault still converges on the same process.
    const sim = await simConverges(s, 7);
    expect(sim.output).toMatch(/mismatches=0 pending=0/);
    expect(sim.code).toBe(0);
  }, 150_000);
});
