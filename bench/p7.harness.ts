// P7's stock side: queued orders accepted over HTTP (untimed), then drained by the stock pump with
// its three steps overlapped (drain's default) or one after the other, rounds alternating the two.
// Per form: orders reserved per second, and PostgreSQL's and this process's CPU per order.
// `node --import tsx bench/p7.harness.ts [rounds] [perRound]`.
import { performance } from 'node:perf_hooks';
import { openBenchDatabase } from './database.ts';
import { startDriver, type DriverRequest } from './driver.ts';
import { seedSkus } from './orders.stock.ts';
import { postgresNs } from './proc.ts';
import { BENCH_TENANT, startFlashpayServer } from './servers.ts';
import { loadConfig } from '../src/platform/config.ts';
import { createStockPump } from '../src/orders/index.ts';
import { post } from './flash.support.ts';

const rounds = Number(process.argv[2] ?? 4);
const perRound = Number(process.argv[3] ?? 4000);

const database = await openBenchDatabase((line) => console.error(line));
const config = loadConfig({}, process.cwd());
const flashpay = await startFlashpayServer(database.url, config);
const driver = await startDriver();
await seedSkus(flashpay.deps.db, [{ sku: 'p7h/sku', stock: 10_000_000 }]);
const tokens = await Promise.all(Array.from({ length: 1000 }, (_, i) => flashpay.buyerToken(`u${i}`)));
let serial = 0;
const requests = (n: number): DriverRequest[] =>
  Array.from({ length: n }, () => {
    const i = serial++;
    return post(
      '/v1/orders',
      tokens[i % tokens.length]!,
      `q-${i}`,
      { sku: 'p7h/sku', quantity: 1 },
      { prefer: 'respond-async' },
    );
  });
const pumpOf = (overlap: boolean) =>
  createStockPump({
    shopDb: flashpay.deps.db,
    stockDb: flashpay.deps.db,
    clock: flashpay.deps.clock,
    leaseMs: config.claimLeaseMs,
    resendAfterMs: config.stockResendAfterMs,
    roles: { shop: true, stock: true },
    overlap,
  });
const forms = [
  { name: 'overlapped', pump: pumpOf(true), n: 0, ms: 0, pg: 0, node: 0 },
  { name: 'sequential', pump: pumpOf(false), n: 0, ms: 0, pg: 0, node: 0 },
];
// Warm-up: a round of each, untimed.
for (const form of forms) {
  await driver.run({ origin: flashpay.url, concurrency: 64, requests: requests(Math.min(1000, perRound)) });
  await form.pump.drain();
}
for (let r = 0; r < rounds; r++)
  for (const form of r % 2 === 0 ? forms : [...forms].reverse()) {
    const run = await driver.run({ origin: flashpay.url, concurrency: 64, requests: requests(perRound) });
    if (run.statuses['202'] !== run.count) console.error(run.statuses, run.codes);
    const pg0 = postgresNs();
    const node0 = process.cpuUsage();
    const startedAt = performance.now();
    const pass = await form.pump.drain();
    form.ms += performance.now() - startedAt;
    form.pg += (postgresNs() - pg0) / 1000;
    const node = process.cpuUsage(node0);
    form.node += node.user + node.system;
    form.n += pass.applied;
  }
const pending = await flashpay.deps.db.query<{ n: number }>(
  `SELECT count(*)::int AS n FROM orders WHERE tenant_id = $1 AND status = 'PENDING'`,
  [BENCH_TENANT],
);
for (const form of forms)
  console.log(
    `${form.name.padEnd(10)} ${((form.n / form.ms) * 1000).toFixed(0).padStart(6)} reserved/s  ` +
      `PostgreSQL ${(form.pg / form.n).toFixed(0)} µs, this process ${(form.node / form.n).toFixed(0)} µs per order (${form.n} applied)`,
  );
console.log(`orders still PENDING: ${pending.rows[0]?.n}`);
await Promise.all(forms.map((f) => f.pump.close()));
await driver.close();
await flashpay.close();
await database.close();
