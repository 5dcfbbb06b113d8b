// P2's server CPU per request, sold-out refusal vs the bare authenticated route, interleaved; and,
// to place the gap, two routes on flashpay's own app that write nothing: `app bare` (the bare
// route's handler behind every hook of the app) and `app 409` (the create's schema validated, the
// refusal's constant problem+json sent).
// `node --import tsx bench/p2.harness.ts [rounds] [perRound]` (add --cpu-prof to profile). The
// server runs here; the driver in its own process, so process.cpuUsage() is the server's CPU
// (plus the pg client's, which is the refusal's own cost).
import { openBenchDatabase } from './database.ts';
import { startDriver, type DriverRequest } from './driver.ts';
import { seedSkus } from './orders.stock.ts';
import { startBareServer, startFlashpayServer, BARE_PATH } from './servers.ts';
import type { RouteModule } from '../src/app.ts';
import { createOrderSchema } from '../src/orders/index.ts';
import { requirePrincipal } from '../src/platform/auth.ts';
import { loadConfig } from '../src/platform/config.ts';

const rounds = Number(process.argv[2] ?? 6);
const perRound = Number(process.argv[3] ?? 4000);
const concurrency = 64;

const database = await openBenchDatabase((line) => console.error(line));
const config = { ...loadConfig({}, process.cwd()) };
const SOLD_OUT =
  '{"type":"about:blank","title":"Conflict","status":409,"code":"SOLD_OUT","detail":"no stock left for p2/sku","sku":"p2/sku"}';
const writesNothing: RouteModule = (app, deps) => {
  const auth = requirePrincipal(deps.signer);
  app.post<{ Body: { sku: string } }>('/bench/app-bare', { onRequest: auth }, async (request, reply) =>
    reply.code(201).send({ order_id: 'bare', sku: request.body.sku, status: 'CREATED' }),
  );
  app.post('/bench/app-409', { onRequest: auth, schema: { body: createOrderSchema.body } }, async (_request, reply) =>
    reply.code(409).type('application/problem+json').send(SOLD_OUT),
  );
};
const flashpay = await startFlashpayServer(database.url, config, [writesNothing]);
const bare = await startBareServer(flashpay);
const driver = await startDriver();
await seedSkus(flashpay.deps.db, [{ sku: 'p2/sku', stock: 0 }]);
const tokens = await Promise.all(Array.from({ length: 200 }, (_, i) => flashpay.buyerToken(`u${i}`)));
let serial = 0;
const requests = (path: string, n: number): DriverRequest[] =>
  Array.from({ length: n }, (_, i) => ({
    method: 'POST',
    path,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${tokens[i % tokens.length]}`,
      'idempotency-key': `h-${serial++}`,
    },
    body: JSON.stringify({ sku: 'p2/sku', quantity: 1 }),
  }));
const allTargets = [
  { name: 'refusal', origin: flashpay.url, path: '/v1/orders' },
  { name: 'bare', origin: bare.url, path: BARE_PATH },
  { name: 'app bare', origin: flashpay.url, path: '/bench/app-bare' },
  { name: 'app 409', origin: flashpay.url, path: '/bench/app-409' },
];
const targets = allTargets.filter((t) => !process.env.P2_ONLY || t.name === process.env.P2_ONLY);
const cpu: Record<string, { us: number; n: number; ms: number }> = {};
for (const t of targets) await driver.run({ origin: t.origin, concurrency, requests: requests(t.path, 1000) });
for (let r = 0; r < rounds; r++) {
  for (const t of r % 2 ? [...targets].reverse() : targets) {
    const reqs = requests(t.path, perRound);
    const before = process.cpuUsage();
    const run = await driver.run({ origin: t.origin, concurrency, requests: reqs });
    const used = process.cpuUsage(before);
    const slot = (cpu[t.name] ??= { us: 0, n: 0, ms: 0 });
    slot.us += used.user + used.system;
    slot.n += run.count;
    slot.ms += run.elapsedMs;
    if (Object.keys(run.statuses).length !== 1) console.error(t.name, run.statuses, run.codes);
  }
}
const per = (name: string) => cpu[name]!.us / cpu[name]!.n;
for (const name of Object.keys(cpu))
  console.log(
    `${name}: ${per(name).toFixed(1)} µs CPU/request, ${((cpu[name]!.n / cpu[name]!.ms) * 1000).toFixed(0)} req/s`,
  );
if (cpu.bare && cpu.refusal) console.log(`refusal/bare CPU: ${(per('refusal') / per('bare')).toFixed(2)}`);
await driver.close();
await bare.close();
await flashpay.close();
await database.close();
