import { type DriverRequest } from './driver.ts';
import type { OrdersContext } from './orders.bench.ts';
import type { OrdersCounts } from './options.ts';
import { checkBaselineStock, checkSkus, seedBaselineStock, seedSkus } from './orders.stock.ts';
import {
  BARE_PATH,
  BASELINE_PATH,
  SINGLE_KEYED_PATH,
  SINGLE_KEYED_INSERT_FIRST_PATH,
  SINGLE_KEYED_UNPIPELINED_PATH,
  SINGLE_UNKEYED_PATH,
  startBareServer,
  startBaselineServer,
  type BaselineServer,
} from './servers.ts';
import { ratio } from './stats.ts';
import { FLOOR_PATH, REFUSAL_FLOOR_PATH, startFloorServer } from './floors.ts';
import { queuedRun } from './flash.queued.ts';
import {
  all,
  buyers,
  checkKeys,
  rotate,
  stockText,
  targetOf,
  type FlashReport,
  type FlashRun,
  type FlashTarget,
} from './flash.support.ts';
export type { FlashReport, FlashRun, FlashTarget } from './flash.support.ts';
export { withRss } from './flash.support.ts';

// Issue 16's runs of the create path (P1, P2, P5, P7), each against the targets its goal names,
// measured in the same run through the same driver, rounds rotating the targets' order so that
// all of them meet the same noise. Peak RSS is the bench process's (it hosts every server).

async function hotRun(
  ctx: OrdersContext,
  baseline: BaselineServer,
  bare: BaselineServer,
  floor: BaselineServer,
  counts: OrdersCounts,
  tokens: string[],
) {
  const n = counts.requests;
  const sku = 'p1/sku';
  // The floor (bench/floors.ts): flashpay's rows and statement behind the bare route.
  const floorSku = 'p1/floor';
  // The same create without the group commit (flashpay's path before it), on a SKU of its own.
  const single = 'p1/single';
  await seedSkus(ctx.flashpay.deps.db, [
    { sku, stock: 2 * n },
    { sku: single, stock: 2 * n },
    { sku: floorSku, stock: 2 * n },
  ]);
  await seedBaselineStock(baseline.db, [{ sku, stock: 2 * n }]);
  const flashpayRequests = buyers(n, tokens, '/v1/orders', 'p1', () => sku);
  const targets = await rotate(
    ctx,
    [
      { name: 'flashpay', origin: ctx.flashpay.url, requests: flashpayRequests },
      { name: 'one-tx-per-buyer', origin: baseline.url, requests: buyers(n, tokens, BASELINE_PATH, 'p1', () => sku) },
      { name: 'bare route', origin: bare.url, requests: buyers(n, tokens, BARE_PATH, 'p1', () => sku) },
      { name: 'floor', origin: floor.url, requests: buyers(n, tokens, FLOOR_PATH, 'p1f', () => floorSku) },
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
  const floorKeys = await checkKeys(ctx, 'p1f-', n);
  const ok = stock.ok && baseStock.ok && keys.ok && floorKeys.ok && targets.every((t) => all(t, 201));
  const run: FlashRun = {
    id: 'P1',
    description: `hot SKU, ${counts.concurrency} buyers, stock ${2 * n}`,
    targets,
    ratios: {
      'vs one-tx-per-buyer': ratio(flashpay.perSecond, targetOf(targets, 'one-tx-per-buyer').perSecond),
      'vs bare route': ratio(flashpay.perSecond, targetOf(targets, 'bare route').perSecond),
      'vs floor': ratio(flashpay.perSecond, targetOf(targets, 'floor').perSecond),
      'floor vs one-tx-per-buyer': ratio(
        targetOf(targets, 'floor').perSecond,
        targetOf(targets, 'one-tx-per-buyer').perSecond,
      ),
      'vs flashpay one tx per buyer': ratio(
        flashpay.perSecond,
        targetOf(targets, 'flashpay, one tx per buyer').perSecond,
      ),
    },
    checks: [
      stockText('flashpay', stock),
      stockText('one-tx-per-buyer', baseStock),
      keys.text,
      `floor: ${floorKeys.text}`,
    ],
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

async function soldOutRun(
  ctx: OrdersContext,
  bare: BaselineServer,
  floor: BaselineServer,
  counts: OrdersCounts,
  tokens: string[],
) {
  const n = counts.requests;
  const sku = 'p2/sku';
  const floorSku = 'p2/floor';
  await seedSkus(ctx.flashpay.deps.db, [
    { sku, stock: 0 },
    { sku: floorSku, stock: 0 },
  ]);
  const targets = await rotate(
    ctx,
    [
      { name: 'flashpay', origin: ctx.flashpay.url, requests: buyers(n, tokens, '/v1/orders', 'p2', () => sku) },
      { name: 'bare route', origin: bare.url, requests: buyers(n, tokens, BARE_PATH, 'p2', () => sku) },
      {
        name: 'floor',
        origin: floor.url,
        requests: buyers(n, tokens, REFUSAL_FLOOR_PATH, 'p2f', () => floorSku),
      },
    ],
    counts,
  );
  const flashpay = targetOf(targets, 'flashpay');
  const keys = await checkKeys(ctx, 'p2-', n);
  const floorKeys = await checkKeys(ctx, 'p2f-', n);
  const stock = await checkSkus(ctx.flashpay.deps.db, 'p2/');
  return {
    id: 'P2',
    description: `sold out, ${counts.concurrency} buyers`,
    targets,
    ratios: {
      'vs bare route': ratio(flashpay.perSecond, targetOf(targets, 'bare route').perSecond),
      'vs floor': ratio(flashpay.perSecond, targetOf(targets, 'floor').perSecond),
      'floor vs bare route': ratio(targetOf(targets, 'floor').perSecond, targetOf(targets, 'bare route').perSecond),
    },
    checks: [stockText('flashpay', stock), keys.text, `floor: ${floorKeys.text}`],
    ok:
      all(flashpay, 409, 'SOLD_OUT') &&
      all(targetOf(targets, 'floor'), 409) &&
      keys.ok &&
      floorKeys.ok &&
      stock.ok &&
      stock.orders === 0,
  } satisfies FlashRun;
}

async function keyLayerRun(ctx: OrdersContext, bare: BaselineServer, counts: OrdersCounts, tokens: string[]) {
  const n = counts.requests;
  const rows = Array.from({ length: 4 * n }, (_, i) => ({ sku: `p5/${i}`, stock: 1 }));
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
      {
        name: 'with keys, insert first',
        origin: bare.url,
        requests: buyers(n, tokens, SINGLE_KEYED_INSERT_FIRST_PATH, 'p5i', (i) => `p5/${3 * n + i}`),
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
      'insert first / without keys': ratio(
        targetOf(targets, 'with keys, insert first').perSecond,
        targetOf(targets, 'without keys').perSecond,
      ),
    },
    checks: [stockText('flashpay', stock)],
    ok: targets.every((t) => all(t, 201)) && stock.ok && stock.orders === 4 * n,
  } satisfies FlashRun;
}

export async function runFlashBench(ctx: OrdersContext, counts: OrdersCounts): Promise<FlashReport> {
  const baseline = await startBaselineServer(ctx.databaseUrl, ctx.poolSize);
  const bare = await startBareServer(ctx.flashpay);
  const floor = await startFloorServer(ctx.flashpay);
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
      [floor.url, FLOOR_PATH],
    ] as const)
      await ctx.driver.run({
        origin,
        concurrency: counts.concurrency,
        requests: buyers(counts.warmup, tokens, path, `p0${path}`, () => 'p0/sku'),
      });
    ctx.log(`orders (issue 16): P1 hot SKU, ${counts.requests} requests, ${counts.concurrency} buyers`);
    const hot = await hotRun(ctx, baseline, bare, floor, counts, tokens);
    ctx.log('orders (issue 16): P5 replays of P1');
    const replay = await replayRun(ctx, targetOf(hot.run.targets, 'flashpay'), hot.flashpayRequests, counts);
    ctx.log('orders (issue 16): P2 sold out');
    const soldOut = await soldOutRun(ctx, bare, floor, counts, tokens);
    ctx.log('orders (issue 16): P5 key layer');
    const keyLayer = await keyLayerRun(ctx, bare, counts, tokens);
    ctx.log('orders (issue 16): P7 queued orders');
    const p1 = targetOf(hot.run.targets, 'flashpay');
    const queued = await queuedRun(ctx, targetOf(hot.run.targets, 'one-tx-per-buyer'), counts, tokens, p1);
    const runs = [hot.run, replay, soldOut, keyLayer, queued];
    return { runs, ok: runs.every((r) => r.ok) };
  } finally {
    await floor.close();
    await bare.close();
    await baseline.close();
  }
}
