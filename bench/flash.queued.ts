// P7: queued orders (Prefer: respond-async) accepted at the API, then the stock side drained.
import type { OrdersContext } from './orders.bench.ts';
import type { OrdersCounts } from './options.ts';
import { checkSkus, seedSkus } from './orders.stock.ts';
import { BENCH_TENANT } from './servers.ts';
import { ratio, round } from './stats.ts';
import { stockPumpFor } from '../src/orders/index.ts';
import { all, buyers, rotate, stockText, withRss, type FlashRun, type FlashTarget } from './flash.support.ts';

export async function queuedRun(
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
  // Interleaved A/B in one run: the group commit of queued creates (orders/queued/pending.batch.ts) and
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
