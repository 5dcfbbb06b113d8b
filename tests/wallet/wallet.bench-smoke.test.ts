import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDriver, type Driver } from '../../bench/driver.ts';
import { startFlashpayServer, type FlashpayServer } from '../../bench/servers.ts';
import { runWalletBench } from '../../bench/wallet.bench.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Not a timed test: it proves the bench's W1 (`npm run bench -- --only wallet`) runs end to end with
// tiny counts, and that its checks hold (every pay PAID, ledger zero, revenue = paid, reconciliation).

const POOL_SIZE = 5;
let db: TestDatabase;
let server: FlashpayServer;
let driver: Driver;

beforeAll(async () => {
  db = await freshDatabase();
  server = await startFlashpayServer(db.url, { ...loadConfig({}), poolSize: POOL_SIZE });
  driver = await startDriver();
});

afterAll(async () => {
  await driver?.close();
  await server?.close();
  await db?.drop();
});

it('W-12 the bench W1 measures wallet pays against card pays of one tenant, its checks ok', async () => {
  const report = await runWalletBench(
    { databaseUrl: db.url, poolSize: POOL_SIZE, flashpay: server, driver, log: () => undefined },
    { requests: 64, concurrency: 8, warmup: 8, users: 16 },
  );
  const run = report.runs[0]!;
  expect(run.targets.map((t) => [t.name, t.count, t.statuses])).toEqual([
    ['wallet pays', 32, { '200': 32 }],
    ['card pays', 32, { '200': 32 }],
  ]);
  expect(run.ratios['wallet / card']).toBeGreaterThan(0);
  expect(run.checks.join('; ')).toContain('ledger sum 0');
  expect(report.ok).toBe(true);
}, 120_000);
