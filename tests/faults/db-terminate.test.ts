import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/payments.ts';
import { answersGrow, startLoad } from './load.ts';
import {
  answeredMatchDatabase,
  convergeClean,
  FAULT_TENANT,
  startFaultStack,
  terminateBackends,
  type FaultStack,
} from './support.ts';

// Proves the process survives every database connection being killed under load (what a
// PostgreSQL restart, a failover or an idle-session killer does): it stays up, no request hangs,
// no 500, every 503 tells the truth, every answer is in the database, and it reconciles clean.
describe('database fault: every backend terminated under load', () => {
  let s: FaultStack;
  beforeAll(async () => {
    s = await startFaultStack({
      env: {
        FLASHPAY_POOL_SIZE: '8',
        FLASHPAY_EXPIRY_INTERVAL_MS: '200',
        FLASHPAY_RECOVERY_INTERVAL_MS: '500',
        FLASHPAY_DB_CONNECT_TIMEOUT_MS: '1000',
        FLASHPAY_IDEMPOTENCY_WAIT_MS: '1000',
      },
    });
  });
  afterAll(async () => s?.close());

  it('F-01: three rounds of pg_terminate_backend on every backend: alive, truthful, converged', async () => {
    expect(
      (await s.adminCall('POST', '/v1/admin/skus', { sku: 'hot', name: 'Hot', price: 500, stock: 100_000 })).status,
    ).toBe(201);
    const load = startLoad({
      api: s.proc.api,
      signer: s.signer,
      tenant: FAULT_TENANT,
      sku: 'hot',
      workers: 12,
      deadlineMs: 15_000,
    });
    let killed = 0;
    for (let round = 0; round < 3; round++) {
      await answersGrow(load.report, 60, s.alive, undefined, s.proc.stderr);
      killed += await terminateBackends([s.db.name, `${s.db.name}_channel`]);
    }
    await answersGrow(load.report, 60, s.alive, undefined, s.proc.stderr); // it serves again after the last round
    const report = await load.stop();

    expect(s.alive()).toBe(true);
    expect(killed).toBeGreaterThan(10);
    expect(report.violations).toEqual([]);
    expect(report.created.size).toBeGreaterThan(50);
    expect(await answeredMatchDatabase(s.db, report.created, report.paid)).toEqual([]);
    const ready = await fetch(`${s.proc.api}/readyz`);
    expect(ready.status).toBe(200);
    const clean = await convergeClean(s);
    expect(clean.mismatches).toEqual([]);
    expect(s.proc.stderr()).not.toMatch(/Unhandled|uncaught/i);
  }, 120_000);

  it('F-03: the pool runs dry behind a hot row held by another session: 503s within the deadline, then it drains', async () => {
    // Proves a dry pool answers 503 UNAVAILABLE + Retry-After instead of queueing requests forever.
    expect(
      (await s.adminCall('POST', '/v1/admin/skus', { sku: 'dry', name: 'Dry', price: 500, stock: 100_000 })).status,
    ).toBe(201);
    const blocker = new pg.Client({ connectionString: s.db.url });
    await blocker.connect();
    await blocker.query(`BEGIN; SELECT 1 FROM skus WHERE sku = 'dry' FOR UPDATE`);
    const load = startLoad({
      api: s.proc.api,
      signer: s.signer,
      tenant: FAULT_TENANT,
      sku: 'dry',
      workers: 16,
      deadlineMs: 15_000,
      maxTries: 1,
    });
    await eventually(
      async () => load.report.unavailable,
      (n) => n >= 16,
      30_000,
    );
    expect(load.report.created.size).toBe(0);
    await blocker.query('COMMIT');
    await blocker.end();
    await answersGrow(load.report, 60, s.alive, undefined, s.proc.stderr);
    const report = await load.stop();
    expect(s.alive()).toBe(true);
    expect(report.violations).toEqual([]);
    expect(await answeredMatchDatabase(s.db, report.created, report.paid)).toEqual([]);
    expect((await convergeClean(s)).mismatches).toEqual([]);
  }, 120_000);
});
