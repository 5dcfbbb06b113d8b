// What issue 16's create-path runs share: their report shapes, the buyers' requests, the rotation
// of targets through rounds, and the checks on keys and stock.
import { mergeRuns, type DriverRequest, type DriverResult, type DriverRun } from './driver.ts';
import type { OrdersContext } from './orders.bench.ts';
import type { OrdersCounts } from './options.ts';
import { type StockCheck } from './orders.stock.ts';
import { BENCH_TENANT } from './servers.ts';
import { round } from './stats.ts';

export interface FlashTarget extends DriverResult {
  name: string;
  /** Highest resident set size of this process while this target's rounds ran. */
  peakRssMb: number;
}

export interface FlashRun {
  id: 'P1' | 'P2' | 'P3' | 'P5' | 'P5-replay' | 'P7' | 'W1';
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

export const MAX_ROUNDS = 5;
export const MIN_REQUESTS_PER_BUYER_PER_ROUND = 15;
export const RSS_SAMPLE_MS = 25;

export interface TargetSpec {
  name: string;
  origin: string;
  requests: DriverRequest[];
  /** Runs before each of this target's rounds (P7: the group commit of queued creates on or off). */
  before?: () => void;
}

export function post(path: string, token: string, key: string, body: unknown, extra: Record<string, string> = {}) {
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

export function buyers(
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
export async function rotate(ctx: OrdersContext, specs: TargetSpec[], counts: OrdersCounts): Promise<FlashTarget[]> {
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

export const all = (result: DriverResult, status: number, code?: string) =>
  result.statuses[String(status)] === result.count && (code === undefined || result.codes[code] === result.count);

/** Every key of the run is DONE, and every 201 names an order of its own buyer (the replay will send it). */
export async function checkKeys(
  ctx: OrdersContext,
  prefix: string,
  expected: number,
): Promise<{ ok: boolean; text: string }> {
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

export const stockText = (name: string, check: StockCheck) =>
  `${name}: ${check.orders} ordered ≤ ${check.stock} stock, oversold ${check.oversoldSkus}, counter mismatches ${check.counterMismatches}`;

export function targetOf(targets: FlashTarget[], name: string): FlashTarget {
  const found = targets.find((t) => t.name === name);
  if (!found) throw new Error(`no target ${name}`);
  return found;
}
