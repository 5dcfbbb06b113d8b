import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { createPool, type Db } from '../../src/platform/db.ts';
import { ensureDatabase } from '../../src/platform/embedded.ts';
import { unpreparedClientClass } from '../../src/platform/pgbouncer.ts';
import { runAsSingleton } from '../../src/platform/singleton.ts';
import { waitFor } from '../support/poll.ts';
import { callApi, kill9, spawnStart, waitForCleanReconciliation, type StartedProcess } from '../support/process.ts';
import { TEST_EVENTS_SECRET, TEST_JWT_SECRET, TEST_NOTIFY_SECRET } from '../support/stack.ts';
import { pgbouncerBinary, startBouncer, type Bouncer } from './bouncer.ts';
import { everyOf } from '../support/every.ts';

// Issue 39: flashpay behind Debian's PgBouncer in transaction mode, in front of a real PostgreSQL.
// Two `flashpay start` processes (one with the workers and the provider double, one API only) run
// the core flows through the pooler with FLASHPAY_PGBOUNCER=1; migrations and the relay's LISTEN
// go to the direct URL. Each feature that needs a session is shown failing through the pooler
// without its change (negative controls) and holding with it.

const found = pgbouncerBinary();
const signer = tokenSigner(TEST_JWT_SECRET);
const token = (user: string, scope: 'buyer' | 'admin' | 'operator' = 'buyer') =>
  signer.sign({ tenantId: 'pb', userId: user, scope });

describe.skipIf(!found.ok)(found.ok ? 'flashpay behind PgBouncer (transaction mode)' : found.why, () => {
  let bouncer: Bouncer;
  let direct: Db;
  let shopA: StartedProcess;
  let shopB: StartedProcess;
  const children: ChildProcess[] = [];
  const dirs: string[] = [];
  const pools: Db[] = [];

  beforeAll(async () => {
    bouncer = await startBouncer(['flashpay', 'scratch']);
    await ensureDatabase(bouncer.direct('postgres'), 'flashpay');
    await ensureDatabase(bouncer.direct('postgres'), 'scratch');
    // What docs/deploy.md tells the operator: the session settings flashpay no longer sends.
    for (const db of ['flashpay', 'scratch']) {
      const admin = createPool(bouncer.direct(db), 1);
      await admin.query(`ALTER DATABASE ${db} SET jit = off`);
      await admin.query(`ALTER DATABASE ${db} SET random_page_cost = 1.1`);
      await admin.end();
    }
    direct = createPool(bouncer.direct('flashpay'), 4);
    const parent: NodeJS.ProcessEnv = { ...process.env };
    delete parent.PGOPTIONS; // flashpay's processes behind the pooler send no startup options
    const env: NodeJS.ProcessEnv = {
      ...parent,
      DATABASE_URL: bouncer.pooled('flashpay'),
      FLASHPAY_DIRECT_DATABASE_URL: bouncer.direct('flashpay'),
      FLASHPAY_PGBOUNCER: '1',
      FLASHPAY_JWT_SECRET: TEST_JWT_SECRET,
      FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
      FLASHPAY_EVENTS_SECRET: TEST_EVENTS_SECRET,
      FLASHPAY_POOL_SIZE: '6',
      FLASHPAY_LOG_LEVEL: 'warn',
      FLASHPAY_RATE_LIMIT_PER_MINUTE: '0',
      // Recovery looks at an UNKNOWN pay after a second, not the default minute (PB-05).
      FLASHPAY_STALE_AFTER_MS: '1000',
      FLASHPAY_RECOVERY_INTERVAL_MS: '300',
    };
    for (let i = 0; i < 2; i++) {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-pb-'));
      await chmod(dir, 0o755);
      dirs.push(dir);
    }
    shopA = await spawnStart(dirs[0]!, env, ['--control']);
    children.push(shopA.child);
    shopB = await spawnStart(dirs[1]!, { ...env, FLASHPAY_CHANNEL_URL: shopA.channel }, ['--role', 'api']);
    children.push(shopB.child);
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) await kill9(child);
    for (const pool of pools) await pool.end().catch(() => undefined);
    await direct?.end();
    await bouncer?.stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const control = async (route: string, body: unknown) => {
    const response = await fetch(`${shopA.channel}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBeLessThan(300);
    return response.json() as Promise<unknown>;
  };
  const chargesOf = async (orderIds: string[]) => {
    const counts = (await (await fetch(`${shopA.channel}/_control/requests`)).json()) as {
      charge?: { by_order?: Record<string, number> };
    };
    return orderIds.map((id) => counts.charge?.by_order?.[id] ?? 0);
  };

  it('PB-01 the session settings come from ALTER DATABASE; a pool that sends them at startup is refused by the pooler (negative control)', async () => {
    const pooled = createPool(bouncer.pooled('flashpay'), 2, 5_000, true);
    pools.push(pooled);
    const settings = await pooled.query<{ jit: string; rpc: string }>(
      "SELECT current_setting('jit') AS jit, current_setting('random_page_cost') AS rpc",
    );
    expect(settings.rows[0]).toEqual({ jit: 'off', rpc: '1.1' });
    const classic = createPool(bouncer.pooled('flashpay'), 1, 5_000, false);
    pools.push(classic);
    await expect(classic.query('SELECT 1')).rejects.toThrow(/unsupported startup parameter: options/);
  });

  it('PB-02 a named prepared statement meets a backend that never saw it (negative control); unnamed, the same sequence works', async () => {
    // LIFO reuse: B's transaction takes the backend A prepared on, so A's next statement runs elsewhere.
    const sequence = async (Client: typeof pg.Client) => {
      const a = new Client({ connectionString: bouncer.pooled('scratch') });
      const b = new Client({ connectionString: bouncer.pooled('scratch') });
      await a.connect();
      await b.connect();
      try {
        const statement = { name: 'pb-02', text: 'SELECT pg_backend_pid() AS pid' };
        await a.query(statement);
        await b.query('BEGIN');
        await b.query('SELECT 1');
        try {
          return (await a.query(statement)).rows.length;
        } finally {
          await b.query('COMMIT');
        }
      } finally {
        await a.end();
        await b.end();
      }
    };
    await expect(sequence(pg.Client)).rejects.toThrow(/prepared statement "pb-02" does not exist/);
    expect(await sequence(unpreparedClientClass(pg.Client))).toBe(1);
  });

  const orderIds: string[] = [];

  it('PB-03 two API processes on one pooler: 24 buyers for 12 units, 12 PAID (a late answer converged) once each, 12 SOLD_OUT, nothing oversold', async () => {
    const admin = await token('ops', 'admin');
    const sku = { sku: 'pb-tee', name: 'Tee', price: 700, stock: 12 };
    expect((await callApi(shopA.api, 'POST', '/v1/admin/skus', admin, sku)).status).toBe(201);
    const statuses: string[] = [];
    const unknownPayMs: number[] = [];
    const buyer = async (i: number) => {
      const api = i % 2 === 0 ? shopA.api : shopB.api;
      const auth = await token(`b${i}`);
      const created = await callApi(api, 'POST', '/v1/orders', auth, { sku: 'pb-tee' }, `pb-c${i}`);
      if (created.status !== 201) return void statuses.push(`${created.status} ${created.body.code}`);
      const orderId = String(created.body.order_id);
      orderIds.push(orderId);
      // Paid through the other process: the order is found whichever process created it.
      const payStarted = performance.now();
      const paid = await callApi(
        i % 2 === 0 ? shopB.api : shopA.api,
        'POST',
        `/v1/orders/${orderId}/pay`,
        auth,
        undefined,
        `pb-p${i}`,
      );
      statuses.push(`${paid.status} ${paid.body.status}`);
      if (paid.body.status === 'UNKNOWN') unknownPayMs.push(performance.now() - payStarted);
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 24) await buyer(next++);
      }),
    );
    // A pay whose charge answers after FLASHPAY_PAY_TIMEOUT_MS (300 ms) is UNKNOWN, which two API
    // processes, the pooler and PostgreSQL on two cores sometimes make it (CI, stop 44): it must
    // converge to PAID through the pooler like the rest, never be read as a failure.
    console.log(`PB-03: answers ${JSON.stringify([...statuses].sort())}`);
    const answers = statuses.map((s) => (s === '200 PAID' || s === '200 UNKNOWN' ? '200 PAID or UNKNOWN' : s));
    const tally = Object.fromEntries([...new Set(answers)].map((s) => [s, answers.filter((t) => t === s).length]));
    expect(tally).toEqual({ '200 PAID or UNKNOWN': 12, '409 SOLD_OUT': 12 });
    // UNKNOWN only for a pay that took the timeout; a quicker UNKNOWN is a wrong answer (issue 55).
    expect(unknownPayMs.filter((ms) => ms < 300)).toEqual([]);
    const rows = await waitFor(
      async () => {
        const r = await direct.query<{ status: string; n: number }>(
          'SELECT status, count(*)::int AS n FROM orders WHERE order_id = ANY($1) GROUP BY status',
          [orderIds],
        );
        return r.rows.length === 1 && r.rows[0]?.status === 'PAID' ? r.rows : undefined;
      },
      'every order PAID (an UNKNOWN pay converged by recovery)',
      30_000,
      100,
    );
    expect(rows).toEqual([{ status: 'PAID', n: 12 }]);
    const skuRow = (await callApi(shopB.api, 'GET', '/v1/admin/skus/pb-tee', admin)).body;
    expect(skuRow).toMatchObject({ total: 12, available: 0, held: 0 });
    expect(await chargesOf(orderIds)).toEqual(orderIds.map(() => 1));
  });

  it('PB-04 the relay delivers every PAID event once through the pooler; its LISTEN is on the direct connection', async () => {
    // PB-03 fills orderIds; without them every check below would pass on nothing (issue 55).
    expect(orderIds).toHaveLength(12);
    const shipped = await waitFor(
      async () => {
        const r = await direct.query<{ order_id: string; ship_count: number }>(
          'SELECT order_id, ship_count FROM fulfillment WHERE order_id = ANY($1)',
          [orderIds],
        );
        return r.rows.length === orderIds.length ? r.rows : undefined;
      },
      'every paid order shipped',
      30_000,
      100,
    );
    expect(everyOf(shipped, (row) => row.ship_count === 1)).toBe(true);
    const pending = await direct.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL AND order_id = ANY($1)',
      [orderIds],
    );
    expect(pending.rows[0]?.n).toBe(0);
    const listeners = await direct.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'flashpay-outbox-listener' AND query LIKE 'LISTEN%'",
    );
    expect(listeners.rows[0]?.n).toBe(1); // shop A's relay; shop B (--role api) runs none
  });

  it("PB-05 a pay whose answer is lost is UNKNOWN, and the worker's recovery converges it to PAID through the pooler, charged once", async () => {
    const admin = await token('ops', 'admin');
    expect(
      (await callApi(shopA.api, 'POST', '/v1/admin/skus', admin, { sku: 'pb-cap', name: 'Cap', price: 300, stock: 1 }))
        .status,
    ).toBe(201);
    const auth = await token('late');
    const created = await callApi(shopB.api, 'POST', '/v1/orders', auth, { sku: 'pb-cap' }, 'pb-late-c');
    expect(created.status).toBe(201);
    const orderId = String(created.body.order_id);
    // The charge happens, its answer comes after the pay's timeout, and no notification is sent.
    await control('/_control/callbacks', { mode: 'HOLD' });
    await control('/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', merchant_order: orderId, ms: 2_000 });
    const paid = await callApi(shopB.api, 'POST', `/v1/orders/${orderId}/pay`, auth, undefined, 'pb-late-p');
    expect([paid.status, paid.body.status]).toEqual([200, 'UNKNOWN']);
    const converged = await waitFor(
      async () => {
        const order = await callApi(shopA.api, 'GET', `/v1/orders/${orderId}`, auth);
        return order.body.status === 'PAID' ? order.body : undefined;
      },
      'recovery to converge the UNKNOWN pay',
      30_000,
      200,
    );
    expect(converged).toMatchObject({ order_id: orderId, status: 'PAID' });
    expect(await chargesOf([orderId])).toEqual([1]);
    await control('/_control/callbacks', { mode: 'AUTO' });
    const report = await waitForCleanReconciliation(shopA.api, await token('ops', 'operator'));
    expect(report.mismatches).toEqual([]);
  });

  it('PB-06 a session advisory lock through the pooler lets two singletons run (negative control); the transaction lock keeps one', async () => {
    const a = createPool(bouncer.pooledSingle('scratch'), 1, 5_000, true);
    const b = createPool(bouncer.pooledSingle('scratch'), 1, 5_000, true);
    pools.push(a, b);
    // The old singleton: a session lock taken by one client stays on the backend the next client gets.
    const first = await a.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(39) AS ok');
    const second = await b.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(39) AS ok');
    expect([first.rows[0]?.ok, second.rows[0]?.ok]).toEqual([true, true]);
    await a.query('SELECT pg_advisory_unlock_all()');

    const pooled = createPool(bouncer.pooled('scratch'), 4, 5_000, true);
    pools.push(pooled);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let running = 0;
    let most = 0;
    const job = async () => {
      running += 1;
      most = Math.max(most, running);
      await gate;
      running -= 1;
      return 'ran';
    };
    const holder = runAsSingleton(pooled, 39, job);
    await waitFor(async () => running === 1, 'the first singleton to start');
    const others = await Promise.all([runAsSingleton(pooled, 39, job), runAsSingleton(pooled, 39, job)]);
    expect(others).toEqual([undefined, undefined]);
    release();
    expect(await holder).toBe('ran');
    expect(await runAsSingleton(pooled, 39, job)).toBe('ran'); // released with its transaction
    expect(most).toBe(1);
  });
});
