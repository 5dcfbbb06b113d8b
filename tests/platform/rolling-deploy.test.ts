import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate, pendingMigrations, type Migration } from '../../src/platform/migrate.ts';
import { startLiveStack, type LiveStack } from '../cli/live-stack.ts';
import { freshDatabase } from '../support/db.ts';
import { waitFor } from '../support/poll.ts';
import { BIN, callApi, spawnStart, waitForExit, type StartedProcess } from '../support/process.ts';

const run = promisify(execFile);

// A rolling deploy (docs/deploy.md, "Rolling deploys"): the release's `flashpay migrate` runs once
// while the old processes serve, and new processes start with FLASHPAY_MIGRATE_ON_START=0. Expand-only
// migrations keep the old code answering; a contract step (a rename) breaks it, which is why
// contract waits for the next release, once no old process is left.

// The next release's expand step: a column on the two hottest tables and a table of its own. It
// holds its ACCESS EXCLUSIVE locks for 0.5 s, as a migration on big tables does, so that requests
// of the old process really queue behind it (the API's lock_timeout is 5 s).
const EXPAND_SQL = `ALTER TABLE orders ADD COLUMN gift_note text;
ALTER TABLE skus ADD COLUMN colour text NOT NULL DEFAULT 'black';
CREATE TABLE gift_wraps (order_id text PRIMARY KEY, paper text NOT NULL);
SELECT pg_sleep(0.5);
`;
// What a contract step would do too early: the old code still reads `skus.name`.
const CONTRACT_SQL = 'ALTER TABLE skus RENAME COLUMN name TO title;\n';

interface Call {
  startedAt: number;
  endedAt: number;
  create: number;
  pay: number;
  status: string | undefined;
  orderId: string | undefined;
}

async function nextRelease(dir: string, files: Record<string, string>): Promise<Migration[]> {
  for (const [file, sql] of Object.entries(files)) await writeFile(path.join(dir, file), sql);
  return [...(await loadMigrations()), ...(await loadMigrations(dir))];
}

describe('rolling deploys: an old and a new API process on one database during a migration (RD)', () => {
  let old: LiveStack;
  let fresh: StartedProcess | undefined;
  let releaseDir = '';
  let adminToken = '';
  beforeAll(async () => {
    releaseDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-rd-release-'));
    old = await startLiveStack({ args: ['--no-workers'], prefix: 'flashpay-rd-' });
    adminToken = await old.token('acme', 'ops', 'admin');
    const made = await callApi(old.api, 'POST', '/v1/admin/skus', adminToken, {
      sku: 'rd-tee',
      name: 'Rolling tee',
      price: 1990,
      stock: 500,
    });
    expect(made.status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    if (fresh?.child.pid && fresh.child.exitCode === null) {
      process.kill(-fresh.child.pid, 'SIGTERM');
      await waitForExit(fresh.child);
    }
    await old?.stop();
    await rm(releaseDir, { recursive: true, force: true });
  });

  async function buy(api: string, user: string): Promise<Call> {
    const token = await old.token('acme', user);
    const startedAt = Date.now();
    const created = await callApi(api, 'POST', '/v1/orders', token, { sku: 'rd-tee' }, `${user}-create`);
    const orderId = created.body?.order_id as string | undefined;
    const paid = orderId
      ? await callApi(api, 'POST', `/v1/orders/${orderId}/pay`, token, undefined, `${user}-pay`)
      : { status: 0, body: undefined };
    return {
      startedAt,
      endedAt: Date.now(),
      create: created.status,
      pay: paid.status,
      status: paid.body?.status,
      orderId,
    };
  }

  it('RD-01: the old process keeps answering correctly while the next release’s expand migration runs, and a new process started with FLASHPAY_MIGRATE_ON_START=0 serves beside it', async () => {
    const calls: Call[] = [];
    let migrationEnd = Infinity;
    const buyer = (async () => {
      // Until three buys have started after the migration's end.
      for (let i = 0; calls.filter((c) => c.startedAt > migrationEnd).length < 3; i++)
        calls.push(await buy(old.api, `rd-old-${i}`));
    })();
    // The buyer loop is under way before the deploy's migrate starts.
    await waitFor(async () => calls.length >= 3, 'three orders bought before the deploy', 60_000);
    const migrationStart = Date.now();
    const applied = await migrate(old.database.url, await nextRelease(releaseDir, { '990_rd_expand.sql': EXPAND_SQL }));
    migrationEnd = Date.now();
    await buyer;
    expect(applied).toEqual([990]);

    // Requests of the old process overlapped the migration, and every answer was the right one.
    expect(calls.filter((c) => c.startedAt < migrationEnd && c.endedAt > migrationStart).length).toBeGreaterThan(0);
    expect(calls.filter((c) => c.startedAt > migrationEnd).length).toBe(3);
    expect(calls.map((c) => [c.create, c.pay])).toEqual(calls.map(() => [201, 200]));
    // The pay's own answer is PAID, or UNKNOWN when the provider's reply outran the 300 ms pay
    // timeout on a loaded machine; the database below says how each ended.
    for (const call of calls) expect(['PAID', 'UNKNOWN']).toContain(call.status);

    // A process of the new release starts without migrating, on a schema newer than it knows.
    fresh = await spawnStart(
      old.dir,
      { ...old.env, FLASHPAY_MIGRATE_ON_START: '0', FLASHPAY_DATA_DIR: path.join(old.dir, '.flashpay-new') },
      ['--no-workers'],
    );
    const onNew = await buy(fresh.api, 'rd-new-0');
    const onOld = await buy(old.api, 'rd-old-after');
    expect([onNew.create, onNew.pay, onOld.create, onOld.pay]).toEqual([201, 200, 201, 200]);
    // Each process reads what the other wrote, the same way.
    const first = calls[0]?.orderId ?? '';
    const readOld = await callApi(old.api, 'GET', `/v1/admin/orders/${onNew.orderId ?? ''}`, adminToken);
    const readNew = await callApi(fresh.api, 'GET', `/v1/admin/orders/${onNew.orderId ?? ''}`, adminToken);
    expect(readOld).toMatchObject({ status: 200, body: { order_id: onNew.orderId } });
    expect(readNew.body).toEqual(readOld.body);
    expect((await callApi(fresh.api, 'GET', `/v1/admin/orders/${first}`, adminToken)).status).toBe(200);

    // The business outcome, from the database: one order a 201, each charged once, units conserved.
    const ids = [...calls, onNew, onOld].map((c) => c.orderId);
    const orders = await old.database.pool.query<{ order_id: string; status: string }>(
      'SELECT order_id, status FROM orders ORDER BY order_id',
    );
    expect(orders.rows.map((r) => r.order_id).sort()).toEqual([...ids].sort());
    expect(orders.rows.map((r) => r.status)).toEqual(orders.rows.map(() => expect.stringMatching(/^(PAID|UNKNOWN)$/)));
    const counters = await callApi(fresh.api, 'GET', '/v1/admin/skus/rd-tee', adminToken);
    const { total, available, held, confirmed, refunded_shipped } = counters.body as Record<string, number>;
    expect({ total, available, sold: (held ?? 0) + (confirmed ?? 0), refunded_shipped }).toEqual({
      total: 500,
      available: 500 - ids.length,
      sold: ids.length,
      refunded_shipped: 0,
    });
    const colour = await old.database.pool.query('SELECT colour FROM skus WHERE sku = $1', ['rd-tee']);
    expect(colour.rows).toEqual([{ colour: 'black' }]);
    expect(await pendingMigrations(old.database.url)).toEqual([]);
  }, 180_000);

  it('RD-02 (negative control): a contract step run while the old process serves breaks it, which is why contract waits a release', async () => {
    const before = await callApi(old.api, 'GET', '/v1/admin/skus/rd-tee', adminToken);
    expect(before).toMatchObject({ status: 200, body: { sku: 'rd-tee', name: 'Rolling tee' } });
    await migrate(old.database.url, await nextRelease(releaseDir, { '991_rd_contract.sql': CONTRACT_SQL }));
    const after = await callApi(old.api, 'GET', '/v1/admin/skus/rd-tee', adminToken);
    expect(after.status).toBeGreaterThanOrEqual(500);
    expect(after.body).toMatchObject({ code: expect.stringMatching(/^(INTERNAL|UNAVAILABLE)$/) });
  });

  it('RD-03: with FLASHPAY_MIGRATE_ON_START=0, start never changes the schema and refuses one behind it, naming `flashpay migrate`; after it, start serves', async () => {
    const database = await freshDatabase({ migrated: false });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-rd3-'));
    try {
      const all = await loadMigrations();
      const last = all.at(-1)?.version ?? 0;
      await migrate(database.url, all.slice(0, -1));
      const env = { ...old.env, DATABASE_URL: database.url, FLASHPAY_DATA_DIR: path.join(dir, '.flashpay') };
      const count = async () =>
        Number((await database.pool.query('SELECT count(*) FROM schema_migrations')).rows[0].count);
      const before = await count();

      const refused = await spawnStart(dir, { ...env, FLASHPAY_MIGRATE_ON_START: '0' }, ['--no-workers']).then(
        () => 'started',
        (error: Error) => error.message,
      );
      expect(refused).toContain('exited with 1');
      expect(refused).toContain(`lacks migrations ${last} `);
      expect(refused).toContain('flashpay migrate');
      expect(await count()).toBe(before);
      const invalid = await spawnStart(dir, { ...env, FLASHPAY_MIGRATE_ON_START: 'yes' }, ['--no-workers']).then(
        () => 'started',
        (error: Error) => error.message,
      );
      expect(invalid).toContain('FLASHPAY_MIGRATE_ON_START must be 0 or 1');
      expect(await count()).toBe(before);

      const { stdout } = await run(process.execPath, [BIN, 'migrate'], { cwd: dir, env });
      expect(stdout.trim()).toBe(`applied migrations ${last}`);
      const served = await spawnStart(dir, { ...env, FLASHPAY_MIGRATE_ON_START: '0' }, ['--no-workers']);
      try {
        const health = await fetch(`${served.api}/readyz`);
        expect(health.status).toBe(200);
      } finally {
        if (served.child.pid) process.kill(-served.child.pid, 'SIGTERM');
        await waitForExit(served.child);
      }
    } finally {
      await database.drop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
