import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { APT_LINE, checkEngines, clusterDown, clusterUp, readState } from '../src/cluster/index.ts';
import { tokenSigner } from '../src/platform/auth.ts';
import { cpuBetween, readCpu, type CpuUse } from './cluster.cpu.ts';
import { adminCall, checkSku, createSku, runLoad, type LoadRun, type Tokens } from './cluster.load.ts';
import {
  bringApiBack,
  pgRoles,
  primaryCounters,
  serverVersion,
  setReplication,
  takeApiOut,
  timeFailover,
  type FailoverSample,
} from './cluster.nodes.ts';
import { startDriver, type Driver } from './driver.ts';
import { ratio } from './stats.ts';

// Issue 33, item 5: what the cluster costs and gives, as ratios within one run on this machine.
// A cluster of real engines on loopback (`flashpay cluster up`: pg_auto_failover primary +
// synchronous standby, 3 nats-server, API processes and a worker behind HAProxy), then:
// create+pay through HAProxy with synchronous vs asynchronous replication and with N vs 1 API
// processes (runs alternated ABBA), the CPU each node spends per paid order in those runs, and
// the time from the primary's death to the first write accepted again (5 kills).

const APIS = 2;
const NATS = 3;
const BUYERS = 32;
const BUYER_TOKENS = 200;
const TENANT = 'bench-cluster';
/** Each timed run lasts about this long at the rate the warm-up measured. */
const RUN_SECONDS = { full: 10, quick: 3 };
const WARMUP_ORDERS = { full: 400, quick: 150, again: 200 };
const KILLS = { full: 5, quick: 2 };
const SETTLE_TIMEOUT_MS = 120_000;

export const CLUSTER_DRIVER =
  'create+pay runs: the bench driver process (node:http keep-alive, one socket per buyer) through HAProxy; ' +
  'failover probe: in the bench process, 4 writers with fetch, one create in flight each, ~every 25 ms';

export type Replication = 'sync' | 'async';

export interface ClusterRun {
  label: string;
  replication: Replication;
  apis: number;
  /** Untimed: not in the ratios nor in the CPU table (still checked). */
  warmup: boolean;
  load: LoadRun;
  /** CPU ms of each node (and the driver, and this process) during the run, and of the whole machine. */
  cpu: CpuUse;
  /** The primary's commits and WAL bytes during the run. */
  primary: { commits: number; walBytes: number };
  failures: string[];
}

export interface ClusterReport {
  skipped?: string;
  runtimeMs: number;
  upMs: number;
  setup: string;
  driver: string;
  postgres: string;
  buyers: number;
  ordersPerRun: number;
  /** What the run size aimed at, from the second warm-up's rate. */
  runSeconds: number;
  /** Each node's role during the timed runs (PostgreSQL nodes: primary / standby). */
  roles: Record<string, string>;
  /** In the order they ran: 2 warm-ups, sync, async, async, sync, 1 API, 1 API, a warm-up, sync. */
  runs: ClusterRun[];
  ratios: { asyncOverSync: number | null; manyOverOne: number | null };
  failover: FailoverSample[];
  reconciliation: string;
  failures: string[];
  ok: boolean;
}

interface Context {
  dir: string;
  api: string;
  tokens: Tokens;
  driver: Driver;
  log: (line: string) => void;
}

interface RunSpec {
  label: string;
  replication: Replication;
  apis: number;
  orders: number;
  warmup: boolean;
}

async function timedRun(context: Context, spec: RunSpec): Promise<ClusterRun> {
  const { dir, api, tokens, driver } = context;
  const { label, orders } = spec;
  const sku = `run-${label.replace(/\W+/g, '-')}-${Math.random().toString(36).slice(2, 8)}`;
  await createSku(api, tokens.admin, sku, orders);
  const nodes = (await readState(dir)).nodes;
  const { primary } = await pgRoles(dir);
  const extra = { driver: driver.pid, 'bench (this process)': process.pid };
  const counters = await primaryCounters(dir, primary);
  const before = readCpu(nodes, extra);
  const load = await runLoad(driver, api, tokens, { sku, orders, concurrency: BUYERS, keyPrefix: sku });
  const cpu = cpuBetween(before, readCpu(nodes, extra));
  const after = await primaryCounters(dir, primary);
  const failures = await checkSku(api, tokens.admin, sku, load.paid);
  context.log(`cluster: ${label}: ${load.paidPerSecond} paid orders/s (${load.paid}/${load.orders})`);
  const delta = { commits: after.commits - counters.commits, walBytes: after.walBytes - counters.walBytes };
  return { ...spec, load, cpu, primary: delta, failures };
}

/** Paid orders over the summed time of the runs that match. */
function pooled(runs: ClusterRun[], match: (run: ClusterRun) => boolean): number {
  const chosen = runs.filter(match);
  const elapsedMs = chosen.reduce((sum, run) => sum + run.load.elapsedMs, 0);
  return elapsedMs > 0 ? (chosen.reduce((sum, run) => sum + run.load.paid, 0) * 1000) / elapsedMs : 0;
}

/**
 * Two warm-ups (the second's rate sizes the runs to about RUN_SECONDS each), then sync/async ABBA,
 * then N/1 API processes ABBA (the second sync run is the first N of it). Runs in the order they ran.
 */
async function throughput(context: Context, quick: boolean) {
  const many = `sync, ${APIS} APIs`;
  const runs: ClusterRun[] = [];
  const warmupOrders = quick ? WARMUP_ORDERS.quick : WARMUP_ORDERS.full;
  const warmup = async (label: string, orders: number) =>
    runs.push(await timedRun(context, { label, replication: 'sync', apis: APIS, orders, warmup: true }));
  await warmup(many, warmupOrders);
  await warmup(many, warmupOrders);
  const seconds = quick ? RUN_SECONDS.quick : RUN_SECONDS.full;
  const orders = Math.min(20_000, Math.max(100, Math.round((runs[1]?.load.paidPerSecond ?? 0) * seconds)));
  context.log(`cluster: ${orders} orders per timed run (~${seconds} s each at the second warm-up's rate)`);
  const step = async (what: string, action: () => Promise<void>) => {
    const startedAt = performance.now();
    await action();
    context.log(`cluster: ${what} in ${Math.round(performance.now() - startedAt)} ms`);
  };
  const run = async (label: string, replication: Replication, apis: number) =>
    runs.push(await timedRun(context, { label, replication, apis, orders, warmup: false }));
  const asynchronous = `async, ${APIS} APIs`;
  await run(many, 'sync', APIS);
  await step('asynchronous replication', () => setReplication(context.dir, false));
  await run(asynchronous, 'async', APIS);
  await run(asynchronous, 'async', APIS);
  await step('synchronous replication', () => setReplication(context.dir, true));
  await run(many, 'sync', APIS);
  const out = `api${APIS}`; // one API process left: api1
  await step(`${out} out of HAProxy`, () => takeApiOut(context.dir, out));
  await run('sync, 1 API', 'sync', 1);
  await run('sync, 1 API', 'sync', 1);
  await step(`${out} back in HAProxy`, () => bringApiBack(context.dir, out));
  // A process just started runs its first requests cold (JIT, its pool's connections).
  await warmup(`${many}, ${out} just back`, WARMUP_ORDERS.again);
  await run(many, 'sync', APIS);
  return { runs, orders, seconds };
}

/** Recovery run by an operator, then reconciliation until it is clean (or the last report). */
async function settle(api: string, operator: string): Promise<{ ok: boolean; text: string }> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    await adminCall(api, operator, 'POST', '/v1/admin/recovery/run', {});
    const { body } = await adminCall(api, operator, 'GET', '/v1/admin/reconciliation');
    const mismatches = (body.mismatches as { class: string }[] | undefined) ?? [];
    const classes = [...new Set(mismatches.map((m) => m.class))].join(', ');
    const text = `reconciliation ${body.ok === true ? 'ok' : 'NOT ok'}: ${mismatches.length} mismatches${classes ? ` (${classes})` : ''}, ${String(body.pending)} pending, statuses ${JSON.stringify(body.statuses)}`;
    if (body.ok === true || Date.now() > deadline) return { ok: body.ok === true, text };
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

async function tokensOf(dir: string): Promise<Tokens> {
  const signer = tokenSigner((await readFile(path.join(dir, 'data', 'jwt.secret'), 'utf8')).trim());
  const sign = (userId: string, scope: 'buyer' | 'admin' | 'operator') =>
    signer.sign({ tenantId: TENANT, userId, scope });
  const buyers = await Promise.all(Array.from({ length: BUYER_TOKENS }, (_, i) => sign(`buyer${i}`, 'buyer')));
  return { admin: await sign('ops', 'admin'), operator: await sign('oncall', 'operator'), buyers };
}

function skippedReport(why: string): ClusterReport {
  return {
    skipped: why,
    runtimeMs: 0,
    upMs: 0,
    setup: '',
    driver: CLUSTER_DRIVER,
    postgres: 'unknown',
    buyers: BUYERS,
    ordersPerRun: 0,
    runSeconds: 0,
    roles: {},
    runs: [],
    ratios: { asyncOverSync: null, manyOverOne: null },
    failover: [],
    reconciliation: '',
    failures: [],
    ok: true,
  };
}

/** The whole part; the cluster is always taken down, its directory kept only when something failed. */
export async function runClusterBench(
  options: { quick: boolean },
  log: (line: string) => void,
): Promise<ClusterReport> {
  try {
    checkEngines(NATS);
  } catch {
    return skippedReport(`skipped: no cluster engines (${APT_LINE})`);
  }
  const startedAt = performance.now();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-bench-cluster-'));
  await chmod(dir, 0o755); // the postgres user must reach it
  log(`cluster: starting a cluster in ${dir} (${APIS} APIs, ${NATS} NATS nodes; about a minute)`);
  const down = () => void clusterDown(dir).finally(() => process.exit(130));
  process.once('SIGINT', down);
  let kept = true;
  try {
    const state = await clusterUp({ dir, apis: APIS, nats: NATS, log: (line) => log(`cluster: ${line}`) });
    const upMs = Math.round(performance.now() - startedAt);
    const driver = await startDriver();
    try {
      const report = await measure({ dir, api: state.api, tokens: await tokensOf(dir), driver, log }, options.quick);
      kept = !report.ok;
      return { ...report, upMs, runtimeMs: Math.round(performance.now() - startedAt) };
    } finally {
      await driver.close();
    }
  } finally {
    process.off('SIGINT', down);
    await clusterDown(dir);
    if (kept) log(`cluster: its directory (logs) is kept: ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
}

async function measure(context: Context, quick: boolean): Promise<Omit<ClusterReport, 'upMs' | 'runtimeMs'>> {
  const { dir, api, tokens, log } = context;
  const roles = await pgRoles(dir);
  const { runs, orders, seconds } = await throughput(context, quick);
  const timed = runs.filter((run) => !run.warmup);
  const sync = (run: ClusterRun) => run.replication === 'sync' && run.apis === APIS;
  const asyncOverSync = ratio(
    pooled(timed.slice(0, 4), (r) => r.replication === 'async'),
    pooled(timed.slice(0, 4), sync),
  );
  const manyOverOne = ratio(
    pooled(timed.slice(3), sync),
    pooled(timed.slice(3), (r) => r.apis === 1),
  );
  await createSku(api, tokens.admin, 'failover-probe', 1_000_000);
  const failover: FailoverSample[] = [];
  for (let i = 0; i < (quick ? KILLS.quick : KILLS.full); i++) {
    const sample = await timeFailover(dir, api, {
      token: tokens.buyers[0]!,
      sku: 'failover-probe',
      keyPrefix: `probe${i}`,
    });
    log(
      `cluster: kill ${i + 1}: ${sample.killed} died, standby promoted after ${sample.promotedMs} ms, writes again after ${sample.outageMs} ms; back as standby in ${sample.rejoinMs} ms`,
    );
    failover.push(sample);
  }
  const reconciliation = await settle(api, tokens.operator);
  const failures = [...runs.flatMap((run) => run.failures), ...(reconciliation.ok ? [] : [reconciliation.text])];
  return {
    setup: `pg_auto_failover (monitor, primary, synchronous standby), ${NATS} nats-server (JetStream, 3 replicas), ${APIS} API processes + 1 worker behind HAProxy, the provider double; loopback, one machine`,
    driver: CLUSTER_DRIVER,
    postgres: await serverVersion(dir, roles.primary),
    buyers: BUYERS,
    ordersPerRun: orders,
    runSeconds: seconds,
    roles: { [roles.primary]: 'primary', [roles.standby]: 'standby' },
    runs,
    ratios: { asyncOverSync, manyOverOne },
    failover,
    reconciliation: reconciliation.text,
    failures,
    ok: failures.length === 0,
  };
}
