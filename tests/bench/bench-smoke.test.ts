import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDriver, type Driver } from '../../bench/driver.ts';
import { runOrdersBench } from '../../bench/orders.bench.ts';
import { runFlashBench } from '../../bench/flash.bench.ts';
import { runEndToEndBench } from '../../bench/e2e.bench.ts';
import { runOutboxBench } from '../../bench/outbox.bench.ts';
import { runRecoveryBench } from '../../bench/recovery.bench.ts';
import { runWalletBench } from '../../bench/wallet.bench.ts';
import { startFlashpayServer, type FlashpayServer } from '../../bench/servers.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Not a timed test: it proves `flashpay bench` still runs end to end, with tiny counts, and that
// its correctness checks (no oversell, every event applied exactly once) hold.

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

it('runs every order scenario against its baseline without overselling', async () => {
  const counts = { requests: 40, concurrency: 8, warmup: 8, users: 5 };
  const report = await runOrdersBench(
    { databaseUrl: db.url, poolSize: POOL_SIZE, flashpay: server, driver, log: () => undefined },
    counts,
  );
  expect(report.runs.map((run) => run.scenario)).toEqual(['hot', 'sold-out', 'uncontended']);
  expect(report.brokenSkus).toBe(0);
  for (const run of report.runs) {
    for (const target of [run.flashpay, run.baseline]) {
      expect(target.count).toBe(counts.requests);
      expect(target.perSecond).toBeGreaterThan(0);
      expect(target.p99Ms).toBeGreaterThan(0);
      expect(target.answersOk).toBe(true);
      expect(target.stock).toMatchObject({ oversoldSkus: 0, counterMismatches: 0, ok: true });
    }
    expect(run.ratio.throughput).toBeGreaterThan(0);
  }
  expect(report.ok).toBe(true);
});

it('delivers outbox events through relays to the webhook exactly once, next to its baseline', async () => {
  const context = {
    db: server.deps.db,
    webhookUrl: `${server.url}/v1/fulfillment/events`,
    secret: server.deps.eventsSecret,
    natsUrl: undefined,
    log: () => undefined,
  };
  const report = await runOutboxBench(context, { events: 60, relayCounts: [1, 2], batchSize: 10 });
  expect(report.skipped).toEqual(['nats: skipped: no broker (NATS_URL not set)']);
  // consumer: the consumer alone, P4's ceiling from the far side (bench/outbox.relays.ts).
  expect(report.runs.map((run) => [run.sink, run.relays])).toEqual([
    ['consumer', 1],
    ['consumer', 2],
    ['http', 1],
    ['http', 2],
  ]);
  for (const run of report.runs) {
    expect(run.flashpay.perSecond).toBeGreaterThan(0);
    expect(run.baseline.perSecond).toBeGreaterThan(0);
    expect(run.check).toMatchObject({
      published: 60,
      pending: 0,
      dead: 0,
      shippedOrders: 60,
      shipCountNotOne: 0,
      arrivals: { APPLIED: 60 },
    });
  }
  expect(report.ok).toBe(true);
});

it("runs issue 16's create-path runs (P1, P2, P5, P7) with their checks", async () => {
  const counts = { requests: 40, concurrency: 8, warmup: 8, users: 5 };
  const report = await runFlashBench(
    { databaseUrl: db.url, poolSize: POOL_SIZE, flashpay: server, driver, log: () => undefined },
    counts,
  );
  expect(report.runs.map((run) => run.id)).toEqual(['P1', 'P5-replay', 'P2', 'P5', 'P7']);
  for (const run of report.runs) {
    expect(run.ok, `${run.id}: ${run.checks.join('; ')}`).toBe(true);
    for (const target of run.targets) expect(target.perSecond).toBeGreaterThan(0);
  }
  expect(report.runs[0]?.ratios['vs bare route']).toBeGreaterThan(0);
  expect(report.ok).toBe(true);
});

it("runs issue 16's P6: recovery converges every UNKNOWN order to the provider's answer, next to its query baseline", async () => {
  const report = await runRecoveryBench(
    { flashpay: server, provider: 'in-process', log: () => undefined },
    { orders: 100, unchargedEvery: 5, providerLatencyMs: 2 },
  );
  expect(report.check).toMatchObject({
    byStatus: { PAID: 80, FAILED: 20 },
    wrongOutcome: 0,
    countersConserved: true,
    eventsNotOne: 0,
    reconciliationMismatches: 0,
    ok: true,
  });
  // A call lost to a busy machine is retried by the next pass: at least one query each, a close per never-charged order.
  expect(report.recovery.queries).toBeGreaterThanOrEqual(100);
  expect(report.recovery.closes).toBeGreaterThanOrEqual(20);
  expect(report.baseline.perSecond).toBeGreaterThan(0);
  expect(report.ratio).toBeGreaterThan(0);
});

it("runs issue 16's P3 (create + pay + notification + outbox + fulfilment) on a launched stack with its checks", async () => {
  const counts = { requests: 40, concurrency: 8, warmup: 8, users: 5 };
  const runs = await runEndToEndBench(
    { databaseUrl: db.url, poolSize: POOL_SIZE, flashpay: server, driver, log: () => undefined },
    counts,
    'in-process',
  );
  expect(runs.map((run) => run.id)).toEqual(['P3']);
  const run = runs[0]!;
  expect(run.ok, run.checks.join('; ')).toBe(true);
  // Every order paid (none UNKNOWN), shipped once, its event applied once, reconciliation clean.
  expect(run.checks[0]).toBe('orders 8/8, PAID 8, shipped once 8, twice 0');
  expect(run.targets.find((t) => t.name.trim() === 'of which pay')?.codes).toEqual({ PAID: 8 });
  expect(run.ratios['paid-and-shipped vs uncontended create']).toBeGreaterThan(0);
});

// W1 (`npm run bench -- --only wallet`, issue 38): its checks hold (every pay PAID, ledger zero,
// revenue = paid, reconciliation).
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
