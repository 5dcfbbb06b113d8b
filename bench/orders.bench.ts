import { mergeRuns, type Driver, type DriverRequest, type DriverResult, type DriverRun } from './driver.ts';
import type { OrdersCounts } from './options.ts';
import {
  checkBaselineStock,
  checkSkus,
  countBrokenSkus,
  seedBaselineStock,
  seedSkus,
  type StockCheck,
  type StockRow,
} from './orders.stock.ts';
import { BASELINE_PATH, startBaselineServer, type BaselineServer, type FlashpayServer } from './servers.ts';
import { ratio } from './stats.ts';

// Order creation over real HTTP: flashpay's POST /v1/orders against the baseline route, through the
// same driver, same concurrency, same counts, same pool size, same database. A run is cut into
// rounds that alternate the two targets (B F, F B, B F, …) so that both see the same noise from
// whatever else the machine is doing; each target's rounds are then merged into one figure.

const MAX_ROUNDS = 5;
// A round is at least this many requests per concurrent buyer, so that its ramp-down stays small.
const MIN_REQUESTS_PER_BUYER_PER_ROUND = 15;

export const ORDER_SCENARIOS = ['hot', 'sold-out', 'uncontended'] as const;
export type OrdersScenario = (typeof ORDER_SCENARIOS)[number];

interface Plan {
  description: string;
  /** Every SKU of the run starts with it; the stock check looks at these only. */
  prefix: string;
  stock: StockRow[];
  skuFor(index: number): string;
  expectStatus: number;
  expectCode?: string;
}

function planFor(scenario: OrdersScenario | 'warmup', requests: number): Plan {
  switch (scenario) {
    case 'warmup':
    case 'hot':
      // Twice the requests: every buyer gets a unit, the row is still the one everybody queues on.
      return {
        description: 'hot SKU, ample stock',
        prefix: `${scenario}/`,
        stock: [{ sku: `${scenario}/sku`, stock: 2 * requests }],
        skuFor: () => `${scenario}/sku`,
        expectStatus: 201,
      };
    case 'sold-out':
      return {
        description: 'sold out (stock 0)',
        prefix: 'sold-out/',
        stock: [{ sku: 'sold-out/sku', stock: 0 }],
        skuFor: () => 'sold-out/sku',
        expectStatus: 409,
        expectCode: 'SOLD_OUT',
      };
    case 'uncontended':
      return {
        description: `uncontended (${requests} SKUs, one order each)`,
        prefix: 'uncontended/',
        stock: Array.from({ length: requests }, (_, i) => ({ sku: `uncontended/${i}`, stock: 2 })),
        skuFor: (index) => `uncontended/${index}`,
        expectStatus: 201,
      };
  }
}

export interface TargetFigures extends DriverResult {
  /** Every answer was the expected status (and problem code). */
  answersOk: boolean;
  stock: StockCheck;
}

export interface OrdersRun {
  scenario: OrdersScenario;
  description: string;
  requests: number;
  concurrency: number;
  /** Alternating rounds the run was cut into (each target's figures merge its rounds). */
  rounds: number;
  flashpay: TargetFigures;
  baseline: TargetFigures;
  /** flashpay / baseline: throughput (higher is better for flashpay) and p99 latency (lower is better). */
  ratio: { throughput: number | null; p99: number | null };
  ok: boolean;
}

export interface OrdersReport {
  runs: OrdersRun[];
  /** SKUs anywhere in the database where total ≠ available + held + confirmed. */
  brokenSkus: number;
  ok: boolean;
}

export interface OrdersContext {
  databaseUrl: string;
  poolSize: number;
  flashpay: FlashpayServer;
  driver: Driver;
  log: (line: string) => void;
}

function requestsFor(
  path: string,
  plan: Plan,
  count: number,
  tokens: readonly string[],
  keyPrefix: string,
): DriverRequest[] {
  return Array.from({ length: count }, (_, i) => ({
    method: 'POST',
    path,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${tokens[i % tokens.length] ?? ''}`,
      'idempotency-key': `${keyPrefix}-${i}`,
    },
    body: JSON.stringify({ sku: plan.skuFor(i), quantity: 1 }),
  }));
}

function answersOk(result: DriverResult, plan: Plan): boolean {
  if (result.statuses[String(plan.expectStatus)] !== result.count) return false;
  return plan.expectCode === undefined || result.codes[plan.expectCode] === result.count;
}

interface Targets {
  flashpay: FlashpayServer;
  baseline: BaselineServer;
}

function roundsFor(requests: number, concurrency: number): number {
  return Math.max(1, Math.min(MAX_ROUNDS, Math.floor(requests / (concurrency * MIN_REQUESTS_PER_BUYER_PER_ROUND))));
}

/** Both targets' requests, round by round, in ABBA order; returns each target's merged figures. */
async function alternate(
  ctx: OrdersContext,
  targets: Targets,
  plan: Plan,
  requests: number,
  counts: OrdersCounts,
  tokens: readonly string[],
  keyPrefix: string,
) {
  const all = {
    baseline: requestsFor(BASELINE_PATH, plan, requests, tokens, keyPrefix),
    flashpay: requestsFor('/v1/orders', plan, requests, tokens, keyPrefix),
  };
  const runs: { baseline: DriverRun[]; flashpay: DriverRun[] } = { baseline: [], flashpay: [] };
  const rounds = roundsFor(requests, counts.concurrency);
  for (let round = 0; round < rounds; round++) {
    const from = Math.floor((round * requests) / rounds);
    const to = Math.floor(((round + 1) * requests) / rounds);
    const order = round % 2 === 0 ? (['baseline', 'flashpay'] as const) : (['flashpay', 'baseline'] as const);
    for (const target of order) {
      runs[target].push(
        await ctx.driver.run({
          origin: targets[target].url,
          concurrency: counts.concurrency,
          requests: all[target].slice(from, to),
        }),
      );
    }
  }
  return { baseline: mergeRuns(runs.baseline), flashpay: mergeRuns(runs.flashpay), rounds };
}

async function runScenario(
  ctx: OrdersContext,
  targets: Targets,
  scenario: OrdersScenario | 'warmup',
  counts: OrdersCounts,
  tokens: readonly string[],
) {
  const requests = scenario === 'warmup' ? counts.warmup : counts.requests;
  const plan = planFor(scenario, requests);
  await seedSkus(ctx.flashpay.deps.db, plan.stock);
  await seedBaselineStock(targets.baseline.db, plan.stock);
  const measured = await alternate(ctx, targets, plan, requests, counts, tokens, scenario);
  const baseline = {
    ...measured.baseline,
    answersOk: answersOk(measured.baseline, plan),
    stock: await checkBaselineStock(targets.baseline.db, plan.prefix),
  };
  const flashpay = {
    ...measured.flashpay,
    answersOk: answersOk(measured.flashpay, plan),
    stock: await checkSkus(ctx.flashpay.deps.db, plan.prefix),
  };
  return { plan, requests, rounds: measured.rounds, flashpay, baseline };
}

/** Warm-up (untimed), then hot, sold-out and uncontended runs, each checked for oversell. */
export async function runOrdersBench(ctx: OrdersContext, counts: OrdersCounts): Promise<OrdersReport> {
  const baseline = await startBaselineServer(ctx.databaseUrl, ctx.poolSize);
  try {
    const targets = { flashpay: ctx.flashpay, baseline };
    const tokens = await Promise.all(
      Array.from({ length: counts.users }, (_, i) => ctx.flashpay.buyerToken(`buyer-${i}`)),
    );
    ctx.log(`orders: warm-up, ${counts.warmup} requests per server`);
    await runScenario(ctx, targets, 'warmup', counts, tokens);
    const runs: OrdersRun[] = [];
    for (const scenario of ORDER_SCENARIOS) {
      ctx.log(`orders: ${scenario}, ${counts.requests} requests, ${counts.concurrency} concurrent buyers`);
      const {
        plan,
        requests,
        rounds,
        flashpay,
        baseline: base,
      } = await runScenario(ctx, targets, scenario, counts, tokens);
      const ok = flashpay.answersOk && flashpay.stock.ok && base.answersOk && base.stock.ok;
      runs.push({
        scenario,
        description: plan.description,
        requests,
        concurrency: counts.concurrency,
        rounds,
        flashpay,
        baseline: base,
        ratio: { throughput: ratio(flashpay.perSecond, base.perSecond), p99: ratio(flashpay.p99Ms, base.p99Ms) },
        ok,
      });
    }
    const brokenSkus = await countBrokenSkus(ctx.flashpay.deps.db);
    return { runs, brokenSkus, ok: brokenSkus === 0 && runs.every((run) => run.ok) };
  } finally {
    await baseline.close();
  }
}
