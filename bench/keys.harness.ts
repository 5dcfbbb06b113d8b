// The key layer's cost per request: insert-first (PROCESSING, then an UPDATE), written once
// (finalOnly) and no key at all around the same one-row effect: one connection, requests one after another, the server's and the backend's CPU.
// `node --import tsx bench/keys.harness.ts [rounds] [perRound]`.
import { readFileSync } from 'node:fs';
import { openBenchDatabase } from './database.ts';
import { createPool } from '../src/platform/db.ts';
import { systemClock } from '../src/platform/clock.ts';
import { executeKeyedNow } from '../src/idempotency/index.ts';
import { inTx } from '../src/platform/db.ts';

const rounds = Number(process.argv[2] ?? 6);
const perRound = Number(process.argv[3] ?? 2000);
const database = await openBenchDatabase((line) => console.error(line));
const db = createPool(database.url, 1);
await db.query('CREATE TABLE kh_effects (key text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())');
const pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
const backendNs = () => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
const deps = { db, clock: systemClock, waitMs: 5_000, leaseMs: 30_000 };
let serial = 0;
type Mode = 'insert first' | 'written once' | 'no key';
const effect = (tx: { query: (q: object) => Promise<unknown> }, key: string) =>
  tx.query({ name: 'kh-effect', text: 'INSERT INTO kh_effects (key) VALUES ($1)', values: [key] });
const run = async (mode: Mode, n: number) => {
  for (let i = 0; i < n; i++) {
    const key = `k-${serial++}`;
    if (mode === 'no key') {
      await inTx(db, async (tx) => effect(tx, key), { pipeline: true });
      continue;
    }
    await executeKeyedNow(deps, {
      scope: { tenantId: 't', userId: 'u', operation: 'kh', key },
      digest: 'e'.repeat(64),
      finalOnly: mode === 'written once',
      start: async (tx) => {
        await effect(tx, key);
        return { final: { status: 201, body: `{"key":"${key}"}` } };
      },
    });
  }
};
const modes: Mode[] = ['insert first', 'written once', 'no key'];
for (const mode of modes) await run(mode, 500);
const totals: Record<string, { server: number; backend: number; ms: number; n: number }> = {};
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 ? [...modes].reverse() : modes) {
    const cpu = process.cpuUsage();
    const ns = backendNs();
    const started = performance.now();
    await run(name, perRound);
    const used = process.cpuUsage(cpu);
    const t = (totals[name] ??= { server: 0, backend: 0, ms: 0, n: 0 });
    t.server += used.user + used.system;
    t.backend += (backendNs() - ns) / 1000;
    t.ms += performance.now() - started;
    t.n += perRound;
  }
}
for (const [name, t] of Object.entries(totals))
  console.log(
    `${name}: server ${(t.server / t.n).toFixed(1)} µs, backend ${(t.backend / t.n).toFixed(1)} µs, latency ${((t.ms / t.n) * 1000).toFixed(0)} µs per request`,
  );
await db.end();
await database.close();
