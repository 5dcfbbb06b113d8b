// P1's CPU per buyer: flashpay's create on one hot SKU (or, with P1_SPREAD=1, a SKU per buyer),
// the server here, the driver in its own process, PostgreSQL's processes read from /proc
// (schedstat: nanoseconds on a CPU). `node --import tsx bench/p1.harness.ts [rounds] [perRound]`,
// P1_CONCURRENCY (default 64), P1_TOKENS (buyers, default 1000). Prints, per request: the server's CPU, PostgreSQL's, the machine's
// busy share, and what PostgreSQL counted (commits, rows written and read, buffers).
import { machineJiffies, postgresNs } from './proc.ts';
import { openBenchDatabase } from './database.ts';
import { startDriver, type DriverRequest } from './driver.ts';
import { seedSkus } from './orders.stock.ts';
import { startFlashpayServer } from './servers.ts';
import { loadConfig } from '../src/platform/config.ts';
import { post } from './flash.support.ts';

const rounds = Number(process.argv[2] ?? 4);
const perRound = Number(process.argv[3] ?? 4000);
const concurrency = Number(process.env.P1_CONCURRENCY ?? 64);
const spread = process.env.P1_SPREAD === '1';

const database = await openBenchDatabase((line) => console.error(line));
const flashpay = await startFlashpayServer(database.url, loadConfig({}, process.cwd()));
const driver = await startDriver();
const total = rounds * perRound;
await seedSkus(
  flashpay.deps.db,
  spread
    ? Array.from({ length: total + 1000 }, (_, i) => ({ sku: `p1/s${i}`, stock: 1 }))
    : [{ sku: 'p1/hot', stock: 10_000_000 }],
);
// P1_TOKENS: how many buyers (a token each, used in turn); as many as requests: every token new to the server.
const tokens = await Promise.all(
  Array.from({ length: Number(process.env.P1_TOKENS ?? 1000) }, (_, i) => flashpay.buyerToken(`u${i}`)),
);
let serial = 0;
const requests = (n: number): DriverRequest[] =>
  Array.from({ length: n }, () => {
    const i = serial++;
    return post('/v1/orders', tokens[i % tokens.length]!, `k-${i}`, {
      sku: spread ? `p1/s${i}` : 'p1/hot',
      quantity: 1,
    });
  });
const dbStats = async () =>
  (
    await flashpay.deps.db.query<Record<string, string>>(
      `SELECT xact_commit AS commits, tup_inserted AS inserted, tup_updated AS updated, tup_fetched AS fetched, blks_hit AS buffers
       FROM pg_stat_database WHERE datname = current_database()`,
    )
  ).rows[0]!;

await driver.run({ origin: flashpay.url, concurrency, requests: requests(1000) });
const stats0 = await dbStats();
let [node, pg, n, ms, busy, all] = [0, 0, 0, 0, 0, 0];
let sys = 0;
for (let r = 0; r < rounds; r++) {
  const reqs = requests(perRound);
  const [b0, a0] = machineJiffies();
  const pg0 = postgresNs();
  const before = process.cpuUsage();
  const run = await driver.run({ origin: flashpay.url, concurrency, requests: reqs });
  const used = process.cpuUsage(before);
  const [b1, a1] = machineJiffies();
  sys += used.system;
  [node, pg, busy, all] = [
    node + used.user + used.system,
    pg + (postgresNs() - pg0) / 1000,
    busy + b1 - b0,
    all + a1 - a0,
  ];
  [n, ms] = [n + run.count, ms + run.elapsedMs];
  if (Object.keys(run.statuses).length !== 1) console.error(run.statuses, run.codes);
  console.log(
    `round ${r}: ${run.perSecond.toFixed(0)} req/s, p50 ${run.p50Ms.toFixed(1)} ms, p99 ${run.p99Ms.toFixed(1)} ms`,
  );
}
console.log(
  `c=${concurrency}: ${((n / ms) * 1000).toFixed(0)} req/s; per request: server ${(node / n).toFixed(0)} µs, ` +
    `(${(sys / n).toFixed(0)} in the kernel), PostgreSQL ${(pg / n).toFixed(0)} µs of CPU, machine busy ${((100 * busy) / all).toFixed(0)} %`,
);
// PostgreSQL reports a backend's counters when it goes idle, about once a second.
await new Promise((resolve) => setTimeout(resolve, 1500));
const stats1 = await dbStats();
console.log(
  'per request, as PostgreSQL counted:',
  Object.keys(stats1)
    .map((k) => `${k} ${((Number(stats1[k]) - Number(stats0[k])) / total).toFixed(2)}`)
    .join(', '),
);
await driver.close();
await flashpay.close();
await database.close();
