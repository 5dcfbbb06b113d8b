import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/platform/config.ts';
import type { Db } from '../src/platform/db.ts';
import { openBenchDatabase } from './database.ts';
import { startDriver } from './driver.ts';
import type { BenchOptions } from './options.ts';
import { runOrdersBench } from './orders.bench.ts';
import { runOutboxBench } from './outbox.bench.ts';
import { runFlashBench } from './flash.bench.ts';
import { runRecoveryBench } from './recovery.bench.ts';
import { runEndToEndBench } from './e2e.bench.ts';
import { runClusterBench } from './cluster.bench.ts';
import { runWalletBench } from './wallet.bench.ts';
import type { BenchReport, MachineInfo } from './report.ts';
import { startFlashpayServer } from './servers.ts';
import { round } from './stats.ts';

export const DRIVER_DESCRIPTION = 'separate node process, node:http + keep-alive http.Agent (one socket per buyer)';

async function machineInfo(db: Db, where: string, poolSize: number): Promise<Omit<MachineInfo, 'loadAverage'>> {
  const settings = await db.query<{ version: string; sync: string }>(
    `SELECT current_setting('server_version') AS version, current_setting('synchronous_commit') AS sync`,
  );
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    node: process.version,
    postgres: settings.rows[0]?.version ?? 'unknown',
    synchronousCommit: settings.rows[0]?.sync ?? 'unknown',
    database: where,
    poolSize,
    driver: DRIVER_DESCRIPTION,
  };
}

/**
 * The whole bench: the single-node parts, then (full runs, not --quick) the cluster part on a local
 * cluster of its own (bench/cluster.bench.ts, issue 33), which starts once the others are torn down.
 */
export async function runBench(options: BenchOptions, log: (line: string) => void): Promise<BenchReport> {
  if (options.only === 'cluster') return runClusterAlone(options, log);
  const report = await runSingleNode(options, log);
  if (options.only !== undefined || options.quick) return report;
  const cluster = await runClusterBench(options, log);
  const loadAverage = { ...report.machine.loadAverage, end: round(os.loadavg()[0] ?? 0, 2) };
  return {
    ...report,
    runtimeMs: report.runtimeMs + cluster.runtimeMs,
    machine: { ...report.machine, loadAverage },
    cluster,
    ok: report.ok && cluster.ok,
  };
}

/** `--only cluster`: no single-node database, server or driver; the machine line names the formation's PostgreSQL. */
async function runClusterAlone(options: BenchOptions, log: (line: string) => void): Promise<BenchReport> {
  const loadAtStart = os.loadavg()[0] ?? 0;
  const cluster = await runClusterBench(options, log);
  const machine: MachineInfo = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    node: process.version,
    postgres: cluster.postgres,
    synchronousCommit: 'on (a synchronous standby, but in the async runs)',
    database: "the cluster part's own pg_auto_failover formation",
    poolSize: loadConfig().poolSize,
    driver: cluster.driver,
    loadAverage: { start: round(loadAtStart, 2), end: round(os.loadavg()[0] ?? 0, 2) },
  };
  return {
    date: new Date().toISOString(),
    quick: options.quick,
    runtimeMs: cluster.runtimeMs,
    machine,
    cluster,
    ok: cluster.ok,
  };
}

/**
 * The single-node parts: their own database (embedded, or fresh on DATABASE_URL's server), the real
 * API on 127.0.0.1:0, the driver process; order runs, then outbox runs. Everything is torn down after.
 */
async function runSingleNode(options: BenchOptions, log: (line: string) => void): Promise<BenchReport> {
  const startedAt = performance.now();
  const loadAtStart = os.loadavg()[0] ?? 0;
  log(
    process.env.DATABASE_URL
      ? 'creating and migrating a fresh database on DATABASE_URL'
      : 'starting an embedded PostgreSQL and migrating',
  );
  const database = await openBenchDatabase(log);
  try {
    const config = { ...loadConfig(), logLevel: 'silent' };
    const server = await startFlashpayServer(database.url, config);
    const driver = await startDriver().catch(async (error: unknown) => {
      await server.close();
      throw error;
    });
    try {
      const info = await machineInfo(server.deps.db, database.where, config.poolSize);
      const ordersContext = { databaseUrl: database.url, poolSize: config.poolSize, flashpay: server, driver, log };
      const orders =
        options.only === 'outbox' ||
        options.only === 'flash' ||
        options.only === 'recovery' ||
        options.only === 'p3' ||
        options.only === 'wallet'
          ? undefined
          : { ...(await runOrdersBench(ordersContext, options.orders)), counts: options.orders };
      const flash =
        options.only === 'outbox' || options.only === 'recovery' || options.only === 'wallet'
          ? undefined
          : options.only === 'p3'
            ? { runs: [], ok: true } // P3 alone (issue 16), while working on the pay path
            : await runFlashBench(ordersContext, options.orders);
      if (flash) {
        // Issue 16, P3: the order end to end on a stack launched as `flashpay start` runs it (bench/e2e.bench.ts).
        const p3 = await runEndToEndBench(ordersContext, options.orders);
        flash.runs.push(...p3);
        flash.ok &&= p3.every((run) => run.ok);
      }
      const outboxContext = {
        db: server.deps.db,
        webhookUrl: `${server.url}/v1/fulfillment/events`,
        secret: server.deps.eventsSecret, // the webhook verifies with its own secret, not the provider's
        natsUrl: options.natsUrl,
        log,
      };
      const outbox =
        options.only === 'orders' ||
        options.only === 'flash' ||
        options.only === 'recovery' ||
        options.only === 'p3' ||
        options.only === 'wallet'
          ? undefined
          : await runOutboxBench(outboxContext, options.outbox);
      const recovery =
        options.only === undefined || options.only === 'recovery'
          ? await runRecoveryBench({ flashpay: server, provider: 'process', log }, options.recovery)
          : undefined;
      // Issue 38 item 3, W1: wallet pays against card pays of one tenant (bench/wallet.bench.ts).
      const wallet =
        options.only === undefined || options.only === 'wallet'
          ? await runWalletBench(ordersContext, options.orders)
          : undefined;
      const ok =
        (orders?.ok ?? true) &&
        (outbox?.ok ?? true) &&
        (flash?.ok ?? true) &&
        (recovery?.ok ?? true) &&
        (wallet?.ok ?? true);
      const machine = { ...info, loadAverage: { start: round(loadAtStart, 2), end: round(os.loadavg()[0] ?? 0, 2) } };
      return {
        date: new Date().toISOString(),
        quick: options.quick,
        runtimeMs: Math.round(performance.now() - startedAt),
        machine,
        orders,
        outbox,
        flash,
        recovery,
        wallet,
        ok,
      };
    } finally {
      await driver.close();
      await server.close();
    }
  } finally {
    await database.close();
  }
}
