import { mergeRuns, type DriverRequest, type DriverResult, type DriverRun } from './driver.ts';
import type { OrdersContext } from './orders.bench.ts';
import type { OrdersCounts } from './options.ts';
import { checkBaselineStock, checkSkus, seedBaselineStock, seedSkus, type StockCheck } from './orders.stock.ts';
import {
  BARE_PATH,
  BASELINE_PATH,
  BENCH_TENANT,
  SINGLE_KEYED_PATH,
  SINGLE_KEYED_UNPIPELINED_PATH,
  SINGLE_UNKEYED_PATH,
  startBareServer,
  startBaselineServer,
  type BaselineServer,
} from './servers.ts';
import { ratio, round } from './stats.ts';
import { stockPumpFor } from '../src/stock.pipeline.ts';

// Issue 16's runs of the create path (P1, P2, P5, P7), each against the targets its goal names,
// measured in the same run through the same driver, rounds rotating the targets' order so that
// all of them meet the same noise. Peak RSS is the bench process's (it hosts every server).

export interface FlashTarget extends DriverResult {
  name: string;
  /** Highest resident set size of this process while this target's rounds ran. */
  peakRssMb: number;
}

export interface FlashRun {
  id: 'P1' | 'P2' | 'P3' | 'P5' | 'P5-replay' | 'P7';
  description: string;
  targets: FlashTarget[];
  /** Named ratios of req/s (first target over another). */
  ratios: Record<string, number | null>;
  checks: string[];
  ok: boolean;
}

export interface FlashReport {
  runs: FlashRun[];
  ok: boolean;
}

const MAX_ROUNDS = 5;
const MIN_REQUESTS_PER_BUYER_PER_ROUND = 15;
const RSS_SAMPLE_MS = 25;

interface TargetSpec {
  name: string;
  origin: string;
  requests: DriverRequest[];
  /** Runs before each of this target's rounds (P7: the group commit of queued creates on or off). */
  before?: () => void;
}

function post(path: string, token: string, key: string, body: unknown, extra: Record<string, string> = {}) {
  return {
    method: 'POST' as const,
    path,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
      'idempotency-key': key,
      ...extra,
    },
    body: JSON.stringify(body),
  };
}

function buyers(
  count: number,
  tokens: readonly string[],
  path: string,
  keyPrefix: string,
  skuFor: (i: number) => string,
  extra: Record<string, string> = {},
): DriverRequest[] {
  return Array.from({ length: count }, (_, i) =>
    post(path, tokens[i % tokens.length] ?? '', `${keyPrefix}-${i}`, { sku: skuFor(i), quantity: 1 }, extra),
  );
}

export async function withRss<T>(work: () => Promise<T>): Promise<{ result: T; peakRssMb: number }> {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), RSS_SAMPLE_MS);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, peakRssMb: round(peak / 2 ** 20, 1) };
  } finally {
    clearInterval(timer);
  }
}

/** Every target's requests in rounds; the order of the targets rotates from round to round. */
async function rotate(ctx: OrdersContext, specs: TargetSpec[], counts: OrdersCounts): Promise<FlashTarget[]> {
  const requests = specs[0]?.requests.length ?? 0;
  const rounds = Math.max(
    1,
    Math.min(MAX_ROUNDS, Math.floor(requests / (counts.concurrency * MIN_REQUESTS_PER_BUYER_PER_ROUND))),
  );
  const runs = specs.map(() => [] as DriverRun[]);
  const peaks = specs.map(() => 0);
  for (let r = 0; r < rounds; r++) {
    const from = Math.floor((r * requests) / rounds);
    const to = Math.floor(((r + 1) * requests) / rounds);
    for (let j = 0; j < specs.length; j++) {
      const index = (j + r) % specs.length;
      const spec = specs[index]!;
      spec.before?.();
      const { result, peakRssMb } = await withRss(() =>
        ctx.driver.run({
          origin: spec.origin,
          concurrency: counts.concurrency,
          requests: spec.requests.slice(from, to),
        }),
      );
      runs[index]!.push(result);
      peaks[index] = Math.max(peaks[index]!, peakRssMb);
    }
  }
  return specs.map((spec, i) => ({ name: spec.name, ...mergeRuns(runs[i]!), peakRssMb: peaks[i]! }));
}

const all = (result: DriverResult, status: number, code?: string) =>
  result.statuses[String(status)] === result.count && (code === undefined || result.codes[code] === result.count);

/** Every key of the run is DONE, and every 201 names an order of its own buyer (the replay will send it). */
async function checkKeys(ctx: OrdersContext, prefix: string, expected: number): Promise<{ ok: boolean; text: string }> {
  const result = await ctx.flashpay.deps.db.query<{ keys: number; done: number; orphans: number }>(
    `SELECT count(*)::int AS keys, count(*) FILTER (WHERE k.state = 'DONE')::int AS done,
            count(*) FILTER (WHERE k.response_status = 201 AND NOT EXISTS (
              SELECT 1 FROM orders o WHERE o.order_id = k.response_body::jsonb->>'order_id' AND o.user_id = k.user_id))::int AS orphans
     FROM idempotency_keys k WHERE k.tenant_id = $1 AND k.operation = 'create_order' AND starts_with(k.idempotency_key, $2)`,
    [BENCH_TENANT, prefix],
  );
  const row = result.rows[0] ?? { keys: 0, done: 0, orphans: 0 };
  const ok = row.keys === expected && row.done === expected && row.orphans === 0;
  return { ok, text: `keys ${row.done}/${expected} DONE, ${row.orphans} answers without their order` };
}

const stockText = (name: string, check: StockCheck) =>
  `${name}: ${check.orders} ordered ≤ ${check.stock} stock, oversold ${check.oversoldSkus}, counter mismatches ${check.counterMismatches}`;

function targetOf(targets: FlashTarget[], name: string): FlashTarget {
  const found = targets.find((t) => t.name === name);
  if (!found) throw new Error(`no target ${name}`);
  return found;
}

async function hotRun(
  ctx: OrdersContext,
  baseline: BaselineServer,
  bare: BaselineServer,
  counts: OrdersCounts,
  tokens: string[],
) {
  const n = counts.requests;
  const sku = 'p1/sku';
  // The same create without the group commit (flashpay's path before it), on a SKU of its own.
  const single = 'p1/single';
  await seedSkus(ctx.flashpay.deps.db, [
    { sku, stock: 2 * n },
    { sku: single, stock: 2 * n },
  ]);
  await seedBaselineStock(baseline.db, [{ sku, stock: 2 * n }]);
  const flashpayRequests = buyers(n, tokens, '/v1/orders', 'p1', () => sku);
  const targets = await rotate(
    ctx,
    [
      { name: 'flashpay', origin: ctx.flashpay.url, requests: flashpayRequests },
      { name: 'one-tx-per-buyer', origin: baseline.url, requests: buyers(n, tokens, BASELINE_PATH, 'p1', () => sku) },
      { name: 'bare route', origin: bare.url, requests: buyers(n, tokens, BARE_PATH, 'p1', () => sku) },
      {
        name: 'flashpay, one tx per buyer',
        origin: bare.url,
        requests: buyers(n, tokens, SINGLE_KEYED_PATH, 'p1s', () => single),
      },
    ],
    counts,
  );
  const flashpay = targetOf(targets, 'flashpay');
  const stock = await checkSkus(ctx.flashpay.deps.db, 'p1/');
  const baseStock = await checkBaselineStock(baseline.db, 'p1/');
  const keys = await checkKeys(ctx, 'p1-', n);
  const ok = stock.ok && baseStock.ok && keys.ok && targets.every((t) => all(t, 201));
  const run: FlashRun = {
    id: 'P1',
    description: `hot SKU, ${counts.concurrency} buyers, stock ${2 * n}`,
    targets,
    ratios: {
      'vs one-tx-per-buyer': ratio(flashpay.perSecond, targetOf(targets, 'one-tx-per-buyer').perSecond),
      'vs bare route': ratio(flashpay.perSecond, targetOf(targets, 'bare route').perSecond),
      'vs flashpay one tx per buyer': ratio(
        flashpay.perSecond,
        targetOf(targets, 'flashpay, one tx per buyer').perSecond,
      ),
    },
    checks: [stockText('flashpay', stock), stockText('one-tx-per-buyer', baseStock), keys.text],
    ok,
  };
  return { run, flashpayRequests };
}

async function replayRun(ctx: OrdersContext, first: FlashTarget, requests: DriverRequest[], counts: OrdersCounts) {
  const ordersBefore = await checkSkus(ctx.flashpay.deps.db, 'p1/');
  const [replay] = await rotate(ctx, [{ name: 'replay', origin: ctx.flashpay.url, requests }], counts);
  const after = await checkSkus(ctx.flashpay.deps.db, 'p1/');
  const replayed = replay!.replayed?.true ?? 0;
  const ok = all(replay!, 201) && replayed === requests.length && after.orders === ordersBefore.orders;
  return {
    id: 'P5-replay',
    description: 'P1 again with the same keys: every answer a replay',
    targets: [replay!, { ...first, name: 'first call (P1)' }],
    ratios: { 'replay vs first call': ratio(replay!.perSecond, first.perSecond) },
    checks: [
      `replayed ${replayed}/${requests.length}, orders ${after.orders} (unchanged: ${after.orders === ordersBefore.orders})`,
    ],
    ok,
  } satisfies FlashRun;
}

async function soldOutRun(ctx: OrdersContext, bare: BaselineServer, counts: OrdersCounts, tokens: string[]) {
  const n = counts.requests;
  const sku = 'p2/sku';
  await seedSkus(ctx.flashpay.deps.db, [{ sku, stock: 0 }]);
  const targets = await rotate(
    ctx,
    [
      { name: 'flashpay', origin: ctx.flashpay.url, requests: buyers(n, tokens, '/v1/orders', 'p2', () => sku) },
      { name: 'bare route', origin: bare.url, requests: buyers(n, tokens, BARE_PATH, 'p2', () => sku) },
    ],
    counts,
  );
  const flashpay = targetOf(targets, 'flashpay');
  const keys = await checkKeys(ctx, 'p2-', n);
  const stock = await checkSkus(ctx.flashpay.deps.db, 'p2/');
  return {
    id: 'P2',
    description: `sold out, ${counts.concurrency} buyers`,
    targets,
    ratios: { 'vs bare route': ratio(flashpay.perSecond, targetOf(targets, 'bare route').perSecond) },
    checks: [stockText('flashpay', stock), keys.text],
    ok: all(flashpay, 409, 'SOLD_OUT') && keys.ok && stock.ok && stock.orders === 0,
  } satisfies FlashRun;
}

async function keyLayerRun(ctx: OrdersContext, bare: BaselineServer, counts: OrdersCounts, tokens: string[]) {
  const n = counts.requests;
  const rows = Array.from({ length: 3 * n }, (_, i) => ({ sku: `p5/${i}`, stock: 1 }));
  await seedSkus(ctx.flashpay.deps.db, rows);
  const targets = await rotate(
    ctx,
    [
      { name: 'with keys', origin: bare.url, requests: buyers(n, tokens, SINGLE_KEYED_PATH, 'p5', (i) => `p5/${i}`) },
      {
        name: 'without keys',
        origin: bare.url,
        requests: buyers(n, tokens, SINGLE_UNKEYED_PATH, 'p5', (i) => `p5/${n + i}`),
      },
      {
        name: 'with keys, not pipelined',
        origin: bare.url,
        requests: buyers(n, tokens, SINGLE_KEYED_UNPIPELINED_PATH, 'p5u', (i) => `p5/${2 * n + i}`),
      },
    ],
    counts,
  );
  // Fresh statistics first: planned on none (15,000 new SKUs and orders, autovacuum not there yet),
  // the check's join is a nested loop over both and outlived the 35 s query timeout.
  await ctx.flashpay.deps.db.query('ANALYZE skus, orders, reservations');
  const stock = await checkSkus(ctx.flashpay.deps.db, 'p5/');
  const withKeys = targetOf(targets, 'with keys');
  return {
    id: 'P5',
    description: `key layer, one transaction per buyer, ${n} SKUs each`,
    targets,
    ratios: {
      'with / without keys': ratio(withKeys.perSecond, targetOf(targets, 'without keys').perSecond),
      'not pipelined / without keys': ratio(
        targetOf(targets, 'with keys, not pipelined').perSecond,
        targetOf(targets, 'without keys').perSecond,
      ),
    },
    checks: [stockText('flashpay', stock)],
    ok: targets.every((t) => all(t, 201)) && stock.ok && stock.orders === 3 * n,
  } satisfies FlashRun;
}

async function queuedRun(
  ctx: OrdersContext,
  p1Baseline: FlashTarget,
  counts: OrdersCounts,
  tokens: string[],
  p1?: FlashTarget,
) {
  const n = counts.requests;
  const sku = 'p7/sku';
  const alone = 'p7/one-tx';
  const db = ctx.flashpay.deps.db;
  await seedSkus(db, [
    { sku, stock: 2 * n },
    { sku: alone, stock: 2 * n },
  ]);
  const requests = buyers(n, tokens, '/v1/orders', 'p7', () => sku, { prefer: 'respond-async' });
  const perBuyer = buyers(n, tokens, '/v1/orders', 'p7b', () => alone, { prefer: 'respond-async' });
  // Interleaved A/B in one run: the group commit of queued creates (orders.queued.batch.ts) and
  // FLASHPAY_QUEUED_BATCH=0, one keyed transaction per 202 (the path before it).
  const previous = process.env.FLASHPAY_QUEUED_BATCH;
  const setBatch = (on: boolean) => () => {
    if (on) delete process.env.FLASHPAY_QUEUED_BATCH;
    else process.env.FLASHPAY_QUEUED_BATCH = '0';
  };
  let accepted: FlashTarget | undefined;
  let acceptedAlone: FlashTarget | undefined;
  try {
    [accepted, acceptedAlone] = await rotate(
      ctx,
      [
        { name: 'accepted (202)', origin: ctx.flashpay.url, requests, before: setBatch(true) },
        {
          name: 'accepted (202), one tx per 202',
          origin: ctx.flashpay.url,
          requests: perBuyer,
          before: setBatch(false),
        },
      ],
      counts,
    );
  } finally {
    if (previous === undefined) delete process.env.FLASHPAY_QUEUED_BATCH;
    else process.env.FLASHPAY_QUEUED_BATCH = previous;
  }
  const startedAt = performance.now();
  const { peakRssMb } = await withRss(() => stockPumpFor(ctx.flashpay.deps).drain());
  const elapsedMs = performance.now() - startedAt;
  const reserved = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM orders WHERE tenant_id = $1 AND sku = ANY($2) AND status = 'CREATED'`,
    [BENCH_TENANT, [sku, alone]],
  );
  const count = reserved.rows[0]?.n ?? 0;
  const stock = await checkSkus(db, 'p7/');
  const reservedTarget: FlashTarget = {
    name: 'reserved (stock side)',
    count,
    elapsedMs: round(elapsedMs, 1),
    perSecond: round((count * 1000) / Math.max(elapsedMs, 1), 1),
    p50Ms: 0,
    p99Ms: 0,
    maxMs: 0,
    statuses: {},
    codes: {},
    peakRssMb,
  };
  return {
    id: 'P7',
    description: 'queued orders (Prefer: respond-async), then the stock side drained',
    targets: [accepted!, acceptedAlone!, reservedTarget, { ...p1Baseline, name: 'one-tx-per-buyer (P1)' }],
    ratios: {
      'reserved vs one-tx-per-buyer': ratio(reservedTarget.perSecond, p1Baseline.perSecond),
      'accepted vs one tx per 202': ratio(accepted!.perSecond, acceptedAlone!.perSecond),
      ...(p1 ? { 'accepted vs P1 flashpay': ratio(accepted!.perSecond, p1.perSecond) } : {}),
    },
    checks: [stockText('flashpay', stock), `reserved ${count}/${2 * n}`],
    ok: all(accepted!, 202) && all(acceptedAlone!, 202) && count === 2 * n && stock.ok,
  } satisfies FlashRun;
}

/** P1, P5 (replay), P2, P5 (key layer), P7, with their checks. */
export async function runFlashBench(ctx: OrdersContext, counts: OrdersCounts): Promise<FlashReport> {
  const baseline = await startBaselineServer(ctx.databaseUrl, ctx.poolSize);
  const bare = await startBareServer(ctx.flashpay);
  try {
    const tokens = await Promise.all(
      Array.from({ length: counts.users }, (_, i) => ctx.flashpay.buyerToken(`flash-${i}`)),
    );
    // Untimed: JIT, sockets and prepared statements of every route these runs use.
    await seedSkus(ctx.flashpay.deps.db, [{ sku: 'p0/sku', stock: 2 * counts.warmup }]);
    await seedBaselineStock(baseline.db, [{ sku: 'p0/sku', stock: 2 * counts.warmup }]);
    for (const [origin, path] of [
      [ctx.flashpay.url, '/v1/orders'],
      [baseline.url, BASELINE_PATH],
      [bare.url, BARE_PATH],
    ] as const)
      await ctx.driver.run({
        origin,
        concurrency: counts.concurrency,
        requests: buyers(counts.warmup, tokens, path, `p0${path}`, () => 'p0/sku'),
      });
    ctx.log(`orders (issue 16): P1 hot SKU, ${counts.requests} requests, ${counts.concurrency} buyers`);
    const hot = await hotRun(ctx, baseline, bare, counts, tokens);
    ctx.log('orders (issue 16): P5 replays of P1');
    const replay = await replayRun(ctx, targetOf(hot.run.targets, 'flashpay'), hot.flashpayRequests, counts);
    ctx.log('orders (issue 16): P2 sold out');
    const soldOut = await soldOutRun(ctx, bare, counts, tokens);
    ctx.log('orders (issue 16): P5 key layer');
    const keyLayer = await keyLayerRun(ctx, bare, counts, tokens);
    ctx.log('orders (issue 16): P7 queued orders');
    const p1 = targetOf(hot.run.targets, 'flashpay');
    const queued = await queuedRun(ctx, targetOf(hot.run.targets, 'one-tx-per-buyer'), counts, tokens, p1);
    const runs = [hot.run, replay, soldOut, keyLayer, queued];
    return { runs, ok: runs.every((r) => r.ok) };
  } finally {
    await bare.close();
    await baseline.close();
  }
}
