import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { mergeRuns, type DriverRequest, type DriverResult, type DriverRun } from './driver.ts';
import type { FlashRun, FlashTarget } from './flash.bench.ts';
import type { OrdersContext } from './orders.bench.ts';
import type { OrdersCounts } from './options.ts';
import { checkSkus, seedSkus } from './orders.stock.ts';
import { dropChannelDatabase } from './database.ts';
import { perSecond, ratio, round, summarize } from './stats.ts';
import { launchStack, type RunningStack } from '../src/stack.ts';
import { loadConfig } from '../src/platform/config.ts';
import { payTimeoutOf } from '../src/platform/provider.config.ts';
import { channelClient } from '../src/payments/index.ts';
import { reconcile } from '../src/reconcile/index.ts';
import { startProvider, type Provider } from './recovery.provider.ts';
import { postgresNsBetween, postgresNsByPid, processNs } from './proc.ts';

// Issue 16, P3: an order end to end, as `flashpay start` runs it: launchStack with its workers,
// the provider double on HTTP in a process of its own (memory ledger, as P6 runs it: a real
// provider is another service, our load must not slow its answers), the outbox relay to the
// fulfilment webhook. Each buyer creates an order on ONE SKU with ample stock and pays it at once
// (the driver's chained request); the provider answers and notifies; the relay ships. An order
// counts when shipped: orders/s is the round's orders over the time until its last one shipped.
// The uncontended create (a SKU per buyer, same stack, same buyers) runs in alternating rounds.

/** The issue's range: 20 buyers (where it measured P3 before) and 64 (the other runs' load). */
export const E2E_BUYERS = [20, 64] as const;
const ROUNDS = 2;
/** A tenant of its own: reconciliation judges P3's orders alone (other runs seed PAID orders with no charge). */
const P3_TENANT = 'bench-p3';
const SHIP_WAIT_MS = 60_000;
// The probe (a count over the tenant's orders joined to fulfilment) cost PostgreSQL about 2 ms; every
// 5 ms it took a third of a core from the run it measured (P3 0.37–0.38 / 0.63–0.69 against
// 0.40 / 0.78–0.79 with 20 ms, alternated). 20 ms adds at most 20 ms to a round of 2–4 s, and only late.
const POLL_MS = 20;

const orderRequest = (token: string, key: string, sku: string, pay: boolean): DriverRequest => ({
  method: 'POST',
  path: '/v1/orders',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': key },
  body: JSON.stringify({ sku, quantity: 1 }),
  ...(pay
    ? {
        then: {
          method: 'POST' as const,
          path: '/v1/orders/{order_id}/pay',
          headers: { authorization: `Bearer ${token}`, 'idempotency-key': `${key}/pay` },
        },
      }
    : {}),
});

async function launch(databaseUrl: string, dataDir: string, provider?: Provider): Promise<RunningStack> {
  const channel = provider ? { channelUrl: provider.url, notifySecret: provider.secret } : {};
  // In process (the suite's smoke) the provider double shares our event loop, so the pay timeout
  // would time our own load on a busy test machine, not the provider: give it 2 s there.
  const base = loadConfig();
  const fakeTimeoutMs = payTimeoutOf(base, 'fake');
  const payTimeoutMs = provider ? fakeTimeoutMs : Math.max(fakeTimeoutMs, 2_000);
  const config = { ...base, databaseUrl, dataDir, logLevel: 'silent' as const, payTimeoutMs, ...channel };
  return launchStack({
    config,
    port: 0,
    channelPort: 0,
    control: false,
    workers: true,
    advertise: false,
    log: () => {},
  });
}

// P3 is CPU-bound on 2 cores (the machine 82–92 % busy): its ratio is, within noise, the CPU an
// uncontended create costs over the CPU a paid order costs, summed over the processes that do the
// work. Read from /proc (Linux; elsewhere the line says unknown), per phase of every round.
type Cpu = Record<'postgres' | 'service' | 'provider' | 'driver', number>;
const CPU_PARTS = ['postgres', 'service', 'provider', 'driver'] as const;

interface CpuReading {
  postgres: Map<string, number>;
  service: number;
  provider: number;
  driver: number;
}

function cpuNow(providerPid: number | undefined, driverPid: number | undefined): CpuReading | undefined {
  const usage = process.cpuUsage();
  const postgres = postgresNsByPid();
  const provider = providerPid === undefined ? 0 : processNs(providerPid);
  const driver = processNs(driverPid);
  if (postgres.size === 0 || provider === undefined || driver === undefined) return undefined;
  return { postgres, service: (usage.user + usage.system) * 1_000, provider, driver };
}

function addCpu(into: Cpu | undefined, from: CpuReading | undefined, to: CpuReading | undefined): Cpu | undefined {
  if (!into || !from || !to) return undefined;
  into.postgres += postgresNsBetween(from.postgres, to.postgres);
  for (const part of ['service', 'provider', 'driver'] as const) into[part] += to[part] - from[part];
  return into;
}

const emptyCpu = (): Cpu => ({ postgres: 0, service: 0, provider: 0, driver: 0 });

function describeCpu(cpu: Cpu | undefined, n: number): string {
  if (!cpu) return 'unknown';
  const ms = (ns: number) => round(ns / n / 1e6, 2);
  const total = CPU_PARTS.reduce((sum, part) => sum + cpu[part], 0);
  return `${ms(total)} ms (${CPU_PARTS.map((part) => `${part} ${ms(cpu[part])}`).join(', ')})`;
}

/** PAID orders of the SKU that are shipped; resolves when `paid` of them are, or the wait ends. */
async function waitShipped(stack: RunningStack, sku: string): Promise<number> {
  const deadline = performance.now() + SHIP_WAIT_MS;
  for (;;) {
    const row = (
      await stack.deps.db.query<{ paid: number; shipped: number }>(
        `SELECT count(*) FILTER (WHERE o.status = 'PAID')::int AS paid, count(f.order_id)::int AS shipped
         FROM orders o LEFT JOIN fulfillment f ON f.order_id = o.order_id AND f.ship_count >= 1
         WHERE o.tenant_id = $1 AND o.sku = $2`,
        [P3_TENANT, sku],
      )
    ).rows[0] ?? { paid: 0, shipped: 0 };
    if (row.shipped >= row.paid || performance.now() > deadline) return row.shipped;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

interface E2eCheck {
  orders: number;
  paid: number;
  shippedOnce: number;
  shippedTwice: number;
  applied: number;
  appliedTwice: number;
  published: number;
}

async function checkOrders(stack: RunningStack, sku: string): Promise<E2eCheck> {
  const result = await stack.deps.db.query<E2eCheck>(
    `WITH o AS (SELECT order_id, status FROM orders WHERE tenant_id = $1 AND sku = $2),
          e AS (SELECT x.event_id, x.published_at FROM outbox x JOIN o USING (order_id) WHERE x.event_type = 'ORDER_PAID'),
          a AS (SELECT r.event_id, count(*) AS n FROM ful_received r JOIN e ON r.event_id = e.event_id::text WHERE r.effect = 'APPLIED' GROUP BY r.event_id)
     SELECT (SELECT count(*) FROM o)::int AS orders,
            (SELECT count(*) FROM o WHERE status = 'PAID')::int AS paid,
            (SELECT count(*) FROM fulfillment f JOIN o USING (order_id) WHERE f.ship_count = 1)::int AS "shippedOnce",
            (SELECT count(*) FROM fulfillment f JOIN o USING (order_id) WHERE f.ship_count > 1)::int AS "shippedTwice",
            (SELECT count(*) FROM a)::int AS applied,
            (SELECT count(*) FROM a WHERE n > 1)::int AS "appliedTwice",
            (SELECT count(*) FROM e WHERE published_at IS NOT NULL)::int AS published`,
    [P3_TENANT, sku],
  );
  return result.rows[0]!;
}

function target(
  name: string,
  perSecondValue: number,
  latencies: number[],
  base: DriverResult,
  rss: number,
): FlashTarget {
  return { ...base, name, perSecond: perSecondValue, peakRssMb: rss, ...summarize(latencies.filter((ms) => ms > 0)) };
}

/**
 * P3 at each number of buyers, with its checks, on one stack launched on the bench's database (one
 * provider for all of them, so reconciliation sees every charge); stopped afterwards. `in-process`
 * (the smoke test): launchStack's own provider double, no process to start.
 */
export async function runEndToEndBench(
  ctx: OrdersContext,
  counts: OrdersCounts,
  where: 'process' | 'in-process' = 'process',
): Promise<FlashRun[]> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-bench-e2e-'));
  const provider = where === 'process' ? await startProvider('process', 0, { callbacks: 'DELIVER' }) : undefined;
  let stack: RunningStack | undefined;
  try {
    stack = await launch(ctx.databaseUrl, dataDir, provider);
    const runs: FlashRun[] = [];
    for (const buyers of new Set(E2E_BUYERS.map((b) => Math.min(b, counts.concurrency)))) {
      ctx.log(`orders (issue 16): P3 end to end, ${buyers} buyers`);
      runs.push(await runEndToEndRun(ctx, stack, counts, buyers, where, provider?.pid));
    }
    return runs;
  } finally {
    await stack?.stop();
    await provider?.close();
    await dropChannelDatabase(ctx.databaseUrl);
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function runEndToEndRun(
  ctx: OrdersContext,
  stack: RunningStack,
  counts: OrdersCounts,
  buyers: number,
  where: 'process' | 'in-process',
  providerPid: number | undefined,
): Promise<FlashRun> {
  // SKUs and keys of their own per run, so that two runs share one database.
  const at = `p3b${buyers}`;
  const n = Math.max(buyers, Math.round(counts.requests / 5));
  const rounds = counts.requests >= 1_000 ? ROUNDS : 1;
  // Peak RSS of this process (the stack, its provider double and relay, the bench's other servers).
  let peak = process.memoryUsage.rss();
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 25);
  const peakRssMb = () => round(peak / 2 ** 20, 1);
  try {
    const db = stack.deps.db;
    const tokens = await Promise.all(
      Array.from({ length: counts.users }, (_, i) =>
        stack.signer.sign({ tenantId: P3_TENANT, userId: `e2e-${buyers}-${i}`, scope: 'buyer' }, 24 * 3600),
      ),
    );
    const token = (i: number) => tokens[i % tokens.length] ?? '';
    const warm = Math.max(buyers, Math.round(counts.warmup / 5));
    await seedSkus(
      db,
      [
        { sku: `${at}/warm`, stock: 2 * warm },
        { sku: `${at}/sku`, stock: 2 * n },
        ...Array.from({ length: n + warm }, (_, i) => ({ sku: `${at}u/${i}`, stock: 1 })),
      ],
      P3_TENANT,
    );
    // Untimed: JIT, sockets, prepared statements, the provider's and the relay's first calls.
    await ctx.driver.run({
      origin: stack.api,
      concurrency: buyers,
      requests: Array.from({ length: warm }, (_, i) => orderRequest(token(i), `${at}w-${i}`, `${at}/warm`, true)),
    });
    await ctx.driver.run({
      origin: stack.api,
      concurrency: buyers,
      requests: Array.from({ length: warm }, (_, i) =>
        orderRequest(token(i), `${at}uw-${i}`, `${at}u/${n + i}`, false),
      ),
    });
    await waitShipped(stack, `${at}/warm`);
    const e2eRuns: DriverRun[] = [];
    const createRuns: DriverRun[] = [];
    const xid = async () =>
      Number((await db.query<{ x: string }>('SELECT pg_current_xact_id()::text AS x')).rows[0]?.x);
    let [e2eMs, writes] = [0, 0]; // writes: transactions given an xid (this query's too), a figure load does not move
    const cpu = () => cpuNow(providerPid, ctx.driver.pid);
    let [e2eCpu, createCpu] = [emptyCpu() as Cpu | undefined, emptyCpu() as Cpu | undefined];
    for (let r = 0; r < rounds; r++) {
      const from = Math.floor((r * n) / rounds);
      const to = Math.floor(((r + 1) * n) / rounds);
      const e2e = async () => {
        const xidBefore = await xid();
        const cpuBefore = cpu();
        const startedAt = performance.now();
        e2eRuns.push(
          await ctx.driver.run({
            origin: stack.api,
            concurrency: buyers,
            requests: Array.from({ length: to - from }, (_, j) =>
              orderRequest(token(from + j), `${at}-${from + j}`, `${at}/sku`, true),
            ),
          }),
        );
        await waitShipped(stack, `${at}/sku`);
        e2eMs += performance.now() - startedAt;
        e2eCpu = addCpu(e2eCpu, cpuBefore, cpu());
        writes += (await xid()) - xidBefore - 1;
      };
      const uncontended = async () => {
        const cpuBefore = cpu();
        createRuns.push(
          await ctx.driver.run({
            origin: stack.api,
            concurrency: buyers,
            requests: Array.from({ length: to - from }, (_, j) =>
              orderRequest(token(from + j), `${at}u-${from + j}`, `${at}u/${from + j}`, false),
            ),
          }),
        );
        createCpu = addCpu(createCpu, cpuBefore, cpu());
      };
      for (const step of r % 2 === 0 ? [e2e, uncontended] : [uncontended, e2e]) await step();
    }
    const creates = mergeRuns(e2eRuns);
    const payLatencies = e2eRuns.flatMap((run) => run.chained?.latenciesMs ?? []);
    const outcomes: Record<string, number> = {};
    for (const run of e2eRuns)
      for (const [k, v] of Object.entries(run.chained?.outcomes ?? {})) outcomes[k] = (outcomes[k] ?? 0) + v;
    const uncontended = mergeRuns(createRuns);
    // The relay marks what it delivered after the consumer committed it: give the last marks a moment.
    let check = await checkOrders(stack, `${at}/sku`);
    for (let i = 0; i < 100 && check.published < check.paid; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      check = await checkOrders(stack, `${at}/sku`);
    }
    const stock = await checkSkus(db, `${at}/`, P3_TENANT);
    const report = await reconcile(
      db,
      channelClient(stack.channel, payTimeoutOf(stack.deps.config, 'fake')),
      P3_TENANT,
    );
    // A buyer's whole order: create, then pay, as the buyer waited for them.
    const orderLatencies = e2eRuns.flatMap((run) =>
      run.latenciesMs.map((ms, i) => ms + (run.chained?.latenciesMs[i] ?? 0)),
    );
    const paidPerSecond = perSecond(check.shippedOnce, e2eMs);
    const base = creates;
    const targets: FlashTarget[] = [
      target('paid and shipped', paidPerSecond, orderLatencies, base, peakRssMb()),
      target(
        '  of which create',
        creates.perSecond,
        e2eRuns.flatMap((run) => run.latenciesMs),
        base,
        peakRssMb(),
      ),
      {
        ...target('  of which pay', creates.perSecond, payLatencies, base, peakRssMb()),
        statuses: {},
        codes: outcomes,
      },
      { ...uncontended, name: 'uncontended create', peakRssMb: peakRssMb() },
    ];
    const unknown = outcomes.UNKNOWN ?? 0;
    const ok =
      check.orders === n &&
      check.paid === n &&
      check.shippedOnce === n &&
      check.shippedTwice === 0 &&
      check.published === n &&
      check.applied === n &&
      check.appliedTwice === 0 &&
      stock.ok &&
      report.mismatches.length === 0;
    return {
      id: 'P3',
      description: `create + pay (provider double on HTTP${where === 'process' ? ', own process' : ''}) + notification + outbox + fulfilment, ${buyers} buyers, one SKU`,
      targets,
      ratios: { 'paid-and-shipped vs uncontended create': ratio(paidPerSecond, uncontended.perSecond) },
      checks: [
        `orders ${check.orders}/${n}, PAID ${check.paid}, shipped once ${check.shippedOnce}, twice ${check.shippedTwice}`,
        `ORDER_PAID published ${check.published}, applied once ${check.applied}, more than once ${check.appliedTwice}`,
        `pays ended ${Object.entries(outcomes)
          .map(([k, v]) => `${k}×${v}`)
          .join(' ')} (UNKNOWN ${unknown})`,
        `${at}/: ${stock.orders} ordered ≤ ${stock.stock} stock, counter mismatches ${stock.counterMismatches}`,
        `reconciliation (tenant ${P3_TENANT}): ${report.mismatches.length} mismatches${
          report.mismatches[0] ? `, first ${report.mismatches[0].class}: ${report.mismatches[0].detail}` : ''
        }`,
        `time to ship ${round(e2eMs / 1000, 2)} s, write transactions per order ${round(writes / n, 2)} (all of the database's, relay and consumer included)`,
        `CPU per paid and shipped order ${describeCpu(e2eCpu, n)}; per uncontended create ${describeCpu(createCpu, n)}`,
      ],
      ok,
    };
  } finally {
    clearInterval(sampler);
  }
}
