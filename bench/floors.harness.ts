// Flashpay against its floors (bench/floors.ts: flashpay's own statement behind a bare
// authenticated route). P1 (default): flashpay's create, the floor, the bare route, the minimal
// floor (one row per buyer, group-committed), the one-tx-per-buyer baseline and the queued create
// (202, accepted only), each on a SKU of its own with ample stock. P2 (FLOORS_RUN=p2): flashpay's
// sold-out refusal, the refusal floor and the bare route, on SKUs with no stock. 64 buyers, rounds
// rotating the targets. Per target: req/s over all rounds, and per request the CPU of this process
// (every server runs here; the driver in its own) and of PostgreSQL's processes, and the WAL.
// `node --import tsx bench/floors.harness.ts [rounds] [perRound]`; FLOORS_ONLY=floor,… runs those
// targets and the run's reference only (to profile one with --cpu-prof, or to alternate a change).
import { postgresNs } from './proc.ts';
import { openBenchDatabase } from './database.ts';
import { startDriver, type DriverRequest } from './driver.ts';
import { seedBaselineStock, seedSkus } from './orders.stock.ts';
import { BARE_PATH, BASELINE_PATH, startBareServer, startBaselineServer, startFlashpayServer } from './servers.ts';
import { FLOOR_PATH, MINIMAL_FLOOR_PATH, REFUSAL_FLOOR_PATH, startFloorServer } from './floors.ts';
import { loadConfig } from '../src/platform/config.ts';
import { post } from './flash.support.ts';

const rounds = Number(process.argv[2] ?? 4);
const perRound = Number(process.argv[3] ?? 3000);
const concurrency = Number(process.env.FLOORS_CONCURRENCY ?? 64);
const p2 = process.env.FLOORS_RUN === 'p2';
const stock = p2 ? 0 : 10_000_000;

const database = await openBenchDatabase((line) => console.error(line));
const config = loadConfig({}, process.cwd());
const flashpay = await startFlashpayServer(database.url, config);
const floor = await startFloorServer(flashpay);
const bare = await startBareServer(flashpay);
const baseline = await startBaselineServer(database.url, config.poolSize);
const driver = await startDriver();
// FLOORS_SQL: statements run before the targets (to measure what a constraint or index costs).
if (process.env.FLOORS_SQL) await flashpay.deps.db.query(process.env.FLOORS_SQL);
await seedSkus(flashpay.deps.db, [
  { sku: 'floors/flashpay', stock },
  { sku: 'floors/floor', stock },
  { sku: 'floors/bare', stock },
  { sku: 'floors/queued', stock },
]);
await seedBaselineStock(baseline.db, [
  { sku: 'floors/baseline', stock },
  { sku: 'floors/minimal', stock },
]);
const tokens = await Promise.all(Array.from({ length: 1000 }, (_, i) => flashpay.buyerToken(`u${i}`)));

const reference = p2 ? 'bare' : 'one-tx';
const only = process.env.FLOORS_ONLY?.split(',');
const targets = [
  { name: 'flashpay', origin: flashpay.url, path: '/v1/orders', sku: 'floors/flashpay', status: p2 ? 409 : 201 },
  {
    name: 'floor',
    origin: floor.url,
    path: p2 ? REFUSAL_FLOOR_PATH : FLOOR_PATH,
    sku: 'floors/floor',
    status: p2 ? 409 : 201,
  },
  { name: 'bare', origin: bare.url, path: BARE_PATH, sku: 'floors/bare', status: 201 },
  // One row per buyer, group-committed (bench/floors.ts MINIMAL_FLOOR_PATH): P1 only.
  { name: 'minimal', origin: floor.url, path: MINIMAL_FLOOR_PATH, sku: 'floors/minimal', status: 201 },
  { name: 'one-tx', origin: baseline.url, path: BASELINE_PATH, sku: 'floors/baseline', status: 201 },
  // Queued creates (Prefer: respond-async, 202): accepted only; nothing drains the stock side here.
  { name: 'queued', origin: flashpay.url, path: '/v1/orders', sku: 'floors/queued', status: 202, async: true },
].filter(
  (t) =>
    (!p2 || (t.name !== 'one-tx' && t.name !== 'minimal' && t.name !== 'queued')) &&
    (!only || t.name === reference || only.includes(t.name)),
);

let serial = 0;
const requests = (path: string, sku: string, n: number, async = false): DriverRequest[] =>
  Array.from({ length: n }, () => {
    const i = serial++;
    return post(
      path,
      tokens[i % tokens.length]!,
      `k-${i}`,
      { sku, quantity: 1 },
      async ? { prefer: 'respond-async' } : {},
    );
  });

// WAL written meanwhile, from the insert position (pg_stat_wal's counters are reported late).
const walLsn = async () =>
  Number(
    (await flashpay.deps.db.query<{ lsn: string }>(`SELECT pg_current_wal_insert_lsn() - '0/0' AS lsn`)).rows[0]!.lsn,
  );
const totals = new Map(targets.map((t) => [t.name, { n: 0, ms: 0, node: 0, pg: 0, walBytes: 0 }]));
for (const t of targets)
  await driver.run({
    origin: t.origin,
    concurrency,
    requests: requests(t.path, t.sku, Math.min(1000, perRound), 'async' in t),
  });
for (let r = 0; r < rounds; r++) {
  const order = [...targets.slice(r % targets.length), ...targets.slice(0, r % targets.length)];
  for (const t of order) {
    const pg0 = postgresNs();
    const wal0 = await walLsn();
    const before = process.cpuUsage();
    const run = await driver.run({
      origin: t.origin,
      concurrency,
      requests: requests(t.path, t.sku, perRound, 'async' in t),
    });
    const used = process.cpuUsage(before);
    const sum = totals.get(t.name)!;
    sum.n += run.count;
    sum.ms += run.elapsedMs;
    sum.node += used.user + used.system;
    sum.pg += (postgresNs() - pg0) / 1000;
    sum.walBytes += (await walLsn()) - wal0;
    if (run.statuses[String(t.status)] !== run.count) console.error(t.name, run.statuses, run.codes);
  }
}
const rate = (s: { n: number; ms: number }) => (s.n / s.ms) * 1000;
const ref = rate(totals.get(reference)!);
for (const [name, s] of totals)
  console.log(
    `${name.padEnd(9)} ${rate(s).toFixed(0).padStart(6)} req/s  ${(rate(s) / ref).toFixed(2).padStart(6)}× ${reference}  ` +
      `server ${(s.node / s.n).toFixed(0).padStart(4)} µs  PostgreSQL ${(s.pg / s.n).toFixed(0).padStart(4)} µs  ` +
      `WAL ${(s.walBytes / s.n).toFixed(0)} bytes per request`,
  );
await driver.close();
await Promise.all([floor.close(), bare.close(), baseline.close()]);
await flashpay.close();
await database.close();
