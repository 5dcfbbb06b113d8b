import { performance } from 'node:perf_hooks';
import { channelClient, type ChannelClient } from '../src/payments/index.ts';
import { RECOVERY_PROVIDER_CONCURRENCY } from '../src/recovery/index.ts';
import { payTimeoutOf } from '../src/platform/provider.config.ts';
import { sleep } from '../src/platform/db.ts';
import { recoveryLoop } from '../src/workers.ts';
import { withRss } from './flash.bench.ts';
import { postgresNsBetween, postgresNsByPid, processNs } from './proc.ts';
import type { RecoveryCounts } from './options.ts';
import { startProvider, type Provider } from './recovery.provider.ts';
import {
  chargeAtProvider,
  checkRecovery,
  convergedAt,
  anyUnconverged,
  orderIdOf,
  seedUnknownOrders,
  type RecoveryCheck,
} from './recovery.seed.ts';
import type { FlashpayServer } from './servers.ts';
import { perSecond, ratio, round, summarize } from './stats.ts';

// P6: recovery of `orders` UNKNOWN orders by the recovery loop of `flashpay start`, against the
// provider's own query rate measured in the same run: as many query calls, as many in flight
// (RECOVERY_PROVIDER_CONCURRENCY), through the same client, doing nothing else.

// The loop's interval in this run (5 s by default): a pass drains every claimable order, so the
// interval only delays the first pass; the time is counted from the loop's start, interval included.
const LOOP_INTERVAL_MS = 100;
const POLL_MS = 50;
const CONVERGE_TIMEOUT_MS = 600_000;
const SEED_TIMEOUT_MS = 30_000;

export interface RecoveryContext {
  flashpay: FlashpayServer;
  /** The provider in its own process (the bench) or in this one (the smoke test). */
  provider: 'process' | 'in-process';
  log: (line: string) => void;
}

export interface QueryFigures {
  perSecond: number;
  elapsedMs: number;
  p50Ms: number;
  p99Ms: number;
  /** Calls that got no answer within the pay timeout (a busy machine); recovery retries its own. */
  unanswered?: number;
}

export interface RecoveryReport {
  orders: number;
  charged: number;
  providerLatencyMs: number;
  concurrency: number;
  /** Orders converged per second; p50/p99: time from the loop's start until each order was PAID or FAILED. */
  recovery: QueryFigures & { queries: number; closes: number; peakRssMb: number; cpu?: RecoveryCpu };
  /** The provider's raw query rate: `orders` queries; p50/p99 per call. Mean of the runs before and after. */
  baseline: QueryFigures;
  /** Recovered orders/s over baseline queries/s. */
  ratio: number | null;
  /** The ratio a provider-bound recovery reaches: each never-charged order also needs a close. */
  ceiling: number;
  check: RecoveryCheck;
  ok: boolean;
}

/** CPU time in ms during recovery, per process (Linux /proc; absent elsewhere). */
interface RecoveryCpu {
  postgres: number;
  /** This process: the recovery loop and its client (the provider too when it runs in this process). */
  service: number;
  provider: number;
}

/** `fn` with the CPU that PostgreSQL, this process and the provider's process spent meanwhile. */
async function withCpu<T>(
  providerPid: number | undefined,
  fn: () => Promise<T>,
): Promise<[T, RecoveryCpu | undefined]> {
  const postgres = postgresNsByPid();
  const usage = process.cpuUsage();
  const provider = processNs(providerPid) ?? 0;
  const result = await fn();
  if (postgres.size === 0) return [result, undefined];
  const self = process.cpuUsage(usage);
  return [
    result,
    {
      postgres: postgresNsBetween(postgres, postgresNsByPid()) / 1e6,
      service: (self.user + self.system) / 1000,
      provider: ((processNs(providerPid) ?? 0) - provider) / 1e6,
    },
  ];
}

/** `orders` query calls, `concurrency` in flight, nothing else. */
async function queryBaseline(channel: ChannelClient, orders: number, concurrency: number): Promise<QueryFigures> {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const startedAt = performance.now();
  const worker = async () => {
    while (next < orders) {
      const id = orderIdOf(++next);
      const t = performance.now();
      if ((await channel.query(id)).kind !== 'STATUS') failed++;
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = performance.now() - startedAt;
  const { p50Ms, p99Ms } = summarize(latencies);
  return { perSecond: perSecond(orders, elapsedMs), elapsedMs: round(elapsedMs, 1), p50Ms, p99Ms, unanswered: failed };
}

async function callTotals(provider: Provider): Promise<{ query: number; close: number }> {
  const counts = (await provider.control('GET', '/_control/requests')) as Record<string, { total: number }>;
  return { query: counts.query?.total ?? 0, close: counts.close?.total ?? 0 };
}

/** The recovery loop until every seeded order is PAID or FAILED. */
async function recoverAll(ctx: RecoveryContext, providerUrl: string, orders: number) {
  const deps = {
    ...ctx.flashpay.deps,
    channelUrl: providerUrl,
    config: { ...ctx.flashpay.deps.config, recoveryIntervalMs: LOOP_INTERVAL_MS },
  };
  const startedAt = performance.now();
  const startedAtEpoch = Date.now();
  const loop = recoveryLoop(deps, (line) => ctx.log(`recovery: ${line}`));
  try {
    const deadline = startedAt + CONVERGE_TIMEOUT_MS;
    while (await anyUnconverged(deps.db)) {
      if (performance.now() > deadline) throw new Error(`recovery did not converge ${orders} orders in time`);
      await sleep(POLL_MS);
    }
  } finally {
    await loop.stop();
  }
  const elapsedMs = performance.now() - startedAt;
  const { p50Ms, p99Ms } = summarize((await convergedAt(deps.db)).map((at) => at - startedAtEpoch));
  return { perSecond: perSecond(orders, elapsedMs), elapsedMs: round(elapsedMs, 1), p50Ms, p99Ms };
}

export async function runRecoveryBench(ctx: RecoveryContext, counts: RecoveryCounts): Promise<RecoveryReport> {
  const concurrency = RECOVERY_PROVIDER_CONCURRENCY;
  const provider = await startProvider(ctx.provider, counts.providerLatencyMs);
  try {
    const channel = channelClient(provider.url, payTimeoutOf(ctx.flashpay.deps.config, 'fake'));
    const db = ctx.flashpay.deps.db;
    ctx.log(`recovery: seeding ${counts.orders} UNKNOWN orders, every ${counts.unchargedEvery}th never charged`);
    await seedUnknownOrders(db, counts.orders);
    // Set-up, not timed: a patient client (a loaded machine must not fail the seeding).
    const charged = await chargeAtProvider(
      channelClient(provider.url, SEED_TIMEOUT_MS),
      counts.orders,
      counts.unchargedEvery,
    );
    ctx.log(`recovery: baseline (${counts.orders} queries, ${concurrency} in flight), recovery, baseline`);
    const before = await queryBaseline(channel, counts.orders, concurrency);
    const calls = await callTotals(provider);
    const [{ result, peakRssMb }, cpu] = await withCpu(provider.pid, () =>
      withRss(() => recoverAll(ctx, provider.url, counts.orders)),
    );
    const after = await callTotals(provider);
    const between = await queryBaseline(channel, counts.orders, concurrency);
    const mean = (key: 'perSecond' | 'elapsedMs' | 'p50Ms' | 'p99Ms') => round((before[key] + between[key]) / 2, 2);
    const baseline = {
      perSecond: mean('perSecond'),
      elapsedMs: mean('elapsedMs'),
      p50Ms: mean('p50Ms'),
      p99Ms: mean('p99Ms'),
      unanswered: (before.unanswered ?? 0) + (between.unanswered ?? 0),
    };
    const recovery = {
      ...result,
      queries: after.query - calls.query,
      closes: after.close - calls.close,
      peakRssMb,
      ...(cpu ? { cpu } : {}),
    };
    const check = await checkRecovery(db, channel, counts.orders, counts.unchargedEvery);
    return {
      orders: counts.orders,
      charged,
      providerLatencyMs: counts.providerLatencyMs,
      concurrency,
      recovery,
      baseline,
      ratio: ratio(recovery.perSecond, baseline.perSecond),
      ceiling: round(counts.orders / (counts.orders + (counts.orders - charged)), 3),
      check,
      ok: check.ok,
    };
  } finally {
    await provider.close();
  }
}

function describeCpu(cpu: RecoveryCpu | undefined, orders: number): string {
  if (!cpu) return 'unknown';
  const ms = (total: number) => (total / orders).toFixed(2);
  return `${ms(cpu.postgres + cpu.service + cpu.provider)} ms (postgres ${ms(cpu.postgres)}, service ${ms(cpu.service)}, provider ${ms(cpu.provider)})`;
}

export function formatRecovery(r: RecoveryReport): string {
  const c = r.check;
  const checks = `${c.ok ? 'ok' : 'FAIL'}: ${Object.entries(c.byStatus)
    .map(([s, n]) => `${s}×${n}`)
    .join(
      ' ',
    )}, wrong outcome ${c.wrongOutcome}, counters ${c.countersConserved ? 'conserved' : 'NOT conserved'}, orders without exactly one event ${c.eventsNotOne}, reconciliation mismatches ${c.reconciliationMismatches}${c.firstMismatch ? ` (first: ${c.firstMismatch})` : ''}`;
  return [
    `P6 recovery: ${r.orders} UNKNOWN orders (${r.charged} charged at the provider, the rest never reached it), provider latency ${r.providerLatencyMs} ms per query/close, ${r.concurrency} calls in flight`,
    `  recovery loop: ${r.recovery.perSecond.toFixed(1)} orders/s (${(r.recovery.elapsedMs / 1000).toFixed(2)} s; ${r.recovery.queries} queries + ${r.recovery.closes} closes), converged p50 ${r.recovery.p50Ms.toFixed(0)} ms p99 ${r.recovery.p99Ms.toFixed(0)} ms after the start, peak RSS ${r.recovery.peakRssMb} MB`,
    `  CPU per recovered order: ${describeCpu(r.recovery.cpu, r.orders)}`,
    `  provider raw query rate: ${r.baseline.perSecond.toFixed(1)} queries/s (p50 ${r.baseline.p50Ms.toFixed(1)} ms p99 ${r.baseline.p99Ms.toFixed(1)} ms per call${r.baseline.unanswered ? `, ${r.baseline.unanswered} unanswered in 300 ms` : ''})`,
    `  ratio ${r.ratio?.toFixed(3) ?? '—'} (goal >= 0.8; a provider-bound ceiling is ${r.ceiling.toFixed(3)}: a never-charged order costs a query and a close)`,
    `  check ${checks}`,
  ].join('\n');
}
