// P1 against its floor: flashpay's create, the floor (bench/p1.floor.ts: flashpay's one-statement
// batch behind a bare authenticated route), the bare route and the one-tx-per-buyer baseline, on
// one hot SKU each, 64 buyers, rounds rotating the targets. Per target: req/s over all rounds, and
// per request the CPU of this process (every server runs here; the driver in its own) and of
// PostgreSQL's processes. `node --import tsx bench/p1.floor.harness.ts [rounds] [perRound]`
// (P1F_ONLY=floor,… runs those targets and the baseline; add --cpu-prof to profile them).
import { readdirSync, readFileSync } from 'node:fs';
import { openBenchDatabase } from './database.ts';
import { startDriver, type DriverRequest } from './driver.ts';
import { seedBaselineStock, seedSkus } from './orders.stock.ts';
import { BARE_PATH, BASELINE_PATH, startBareServer, startBaselineServer, startFlashpayServer } from './servers.ts';
import { FLOOR_PATH, startFloorServer } from './p1.floor.ts';
import { loadConfig } from '../src/platform/config.ts';

const rounds = Number(process.argv[2] ?? 4);
const perRound = Number(process.argv[3] ?? 3000);
const concurrency = Number(process.env.P1_CONCURRENCY ?? 64);

function postgresNs(): number {
  let sum = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      sum += Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // gone meanwhile
    }
  }
  return sum;
}

const database = await openBenchDatabase((line) => console.error(line));
const config = loadConfig({}, process.cwd());
const flashpay = await startFlashpayServer(database.url, config);
const floor = await startFloorServer(flashpay);
const bare = await startBareServer(flashpay);
const baseline = await startBaselineServer(database.url, config.poolSize);
const driver = await startDriver();
const stock = 10_000_000;
await seedSkus(flashpay.deps.db, [
  { sku: 'p1f/flashpay', stock },
  { sku: 'p1f/floor', stock },
  { sku: 'p1f/bare', stock },
]);
await seedBaselineStock(baseline.db, [{ sku: 'p1f/baseline', stock }]);
const tokens = await Promise.all(Array.from({ length: 1000 }, (_, i) => flashpay.buyerToken(`u${i}`)));

const targets = [
  { name: 'flashpay', origin: flashpay.url, path: '/v1/orders', sku: 'p1f/flashpay' },
  { name: 'floor', origin: floor.url, path: FLOOR_PATH, sku: 'p1f/floor' },
  { name: 'bare', origin: bare.url, path: BARE_PATH, sku: 'p1f/bare' },
  { name: 'one-tx', origin: baseline.url, path: BASELINE_PATH, sku: 'p1f/baseline' },
];
let serial = 0;
const requests = (path: string, sku: string, n: number): DriverRequest[] =>
  Array.from({ length: n }, () => {
    const i = serial++;
    return {
      method: 'POST',
      path,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${tokens[i % tokens.length]}`,
        'idempotency-key': `k-${i}`,
      },
      body: JSON.stringify({ sku, quantity: 1 }),
    };
  });

// P1F_ONLY=flashpay,floor: only those (and the one-tx baseline, for the ratio), e.g. to profile one.
const only = process.env.P1F_ONLY?.split(',');
if (only) targets.splice(0, targets.length, ...targets.filter((t) => t.name === 'one-tx' || only.includes(t.name)));
const totals = new Map(targets.map((t) => [t.name, { n: 0, ms: 0, node: 0, pg: 0 }]));
for (const t of targets)
  await driver.run({ origin: t.origin, concurrency, requests: requests(t.path, t.sku, Math.min(1000, perRound)) });
for (let r = 0; r < rounds; r++) {
  const order = [...targets.slice(r % targets.length), ...targets.slice(0, r % targets.length)];
  for (const t of order) {
    const pg0 = postgresNs();
    const before = process.cpuUsage();
    const run = await driver.run({ origin: t.origin, concurrency, requests: requests(t.path, t.sku, perRound) });
    const used = process.cpuUsage(before);
    const sum = totals.get(t.name)!;
    sum.n += run.count;
    sum.ms += run.elapsedMs;
    sum.node += used.user + used.system;
    sum.pg += (postgresNs() - pg0) / 1000;
    if (Object.keys(run.statuses).length !== 1 || !run.statuses['201']) console.error(t.name, run.statuses, run.codes);
  }
}
const oneTx = totals.get('one-tx')!;
const rate = (s: { n: number; ms: number }) => (s.n / s.ms) * 1000;
for (const [name, s] of totals)
  console.log(
    `${name.padEnd(9)} ${rate(s).toFixed(0).padStart(6)} req/s  ${(rate(s) / rate(oneTx)).toFixed(2).padStart(6)}× one-tx  ` +
      `server ${(s.node / s.n).toFixed(0).padStart(4)} µs  PostgreSQL ${(s.pg / s.n).toFixed(0).padStart(4)} µs per request`,
  );
await driver.close();
await Promise.all([floor.close(), bare.close(), baseline.close()]);
await flashpay.close();
await database.close();
