import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { expect } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { listSplitDisagreements } from '../../src/reconcile/index.ts';
import { freshDatabase } from '../support/db.ts';
import { waitFor } from '../support/poll.ts';
import {
  BIN,
  callApi,
  kill9,
  waitForCleanReconciliation,
  spawnInventory,
  spawnStart,
  type StartedProcess,
} from '../support/process.ts';
import { TEST_EVENTS_SECRET, TEST_JWT_SECRET, TEST_NOTIFY_SECRET } from '../support/stack.ts';

// The three-process sale with split databases (FLASHPAY_STOCK_SERVICE=separate): two
// `flashpay start` on ONE shop database and `flashpay inventory` on ITS OWN database. 500 buyers
// for 100 units across both shops; the stock service is killed -9 with its first batch written and
// not committed, and restarted; one shop is killed -9 mid-sale (its claims taken over after the
// 1 s lease); 20 winners pay by wallet with too little (RELEASING → CANCELLED), 80 with enough.
// Shared by split-*.test.ts, one file per transport, so that each file stays short.

const TENANT = 'sp';
const BUYERS = 500;
const UNITS = 100;
const SHORT = 20; // winners whose wallet is too low
const PRICE = 500;
const signer = tokenSigner(TEST_JWT_SECRET);
const token = (user: string, scope: 'buyer' | 'admin' | 'operator' = 'buyer') =>
  signer.sign({ tenantId: TENANT, userId: user, scope });

const call = callApi;

/** Runs `work` over `items`, `width` at a time. */
async function inWaves<T>(items: readonly T[], width: number, work: (item: T, i: number) => Promise<void>) {
  for (let i = 0; i < items.length; i += width)
    await Promise.all(items.slice(i, i + width).map((item, j) => work(item, i + j)));
}

/** A `flashpay` command as an operator runs it: its own process; its exit code and output. */
function runCli(cwd: string, env: NodeJS.ProcessEnv, args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export async function runSplitSale(
  extraEnv: NodeJS.ProcessEnv,
  options: {
    operatorCli?: boolean;
    /** The transport has nothing left to deliver (a broker's queues); waited for before the processes stop. */
    drained?: () => Promise<boolean>;
    /**
     * Run once every process is killed, before the databases go: what a killed consumer still held
     * unacknowledged is back on its queue then, and is judged against both databases here.
     */
    leftovers?: (dbs: { shop: Pool; stock: Pool }) => Promise<void>;
  } = {},
): Promise<void> {
  const shopDb = await freshDatabase({ poolSize: 2 });
  const stockDb = await freshDatabase({ poolSize: 2 });
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  let sold = false;
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: shopDb.url,
      FLASHPAY_STOCK_DATABASE_URL: stockDb.url,
      FLASHPAY_JWT_SECRET: TEST_JWT_SECRET,
      FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
      FLASHPAY_EVENTS_SECRET: TEST_EVENTS_SECRET,
      FLASHPAY_STOCK_SERVICE: 'separate',
      FLASHPAY_CLAIM_LEASE_MS: '1000', // the contract's 30 s, shortened so the takeover is quick
      FLASHPAY_POOL_SIZE: '10',
      FLASHPAY_LOG_LEVEL: 'warn',
      FLASHPAY_RATE_LIMIT_PER_MINUTE: '0',
      ...extraEnv,
    };
    for (let i = 0; i < 2; i++) dirs.push(await mkdtemp(path.join(os.tmpdir(), 'flashpay-sp-')));
    // The first stock service stops for good at its first batch's commit (FLASHPAY_FAULTPOINT).
    let inventory = await spawnInventory({ ...env, FLASHPAY_FAULTPOINT: 'stock.batch.before-commit' }, stockDb.url);
    children.push(inventory.child);
    const shopA = await spawnStart(dirs[0] as string, env, ['--port', '0']);
    children.push(shopA.child);
    const shopB = await spawnStart(dirs[1] as string, { ...env, FLASHPAY_CHANNEL_URL: shopA.channel }, ['--port', '0']);
    children.push(shopB.child);

    const admin = await token('ops', 'admin');
    const operator = await token('ops', 'operator');
    // SKU admin writes go to the stock service's port; the shops get the definition as SKU_DEFINED.
    expect(
      (
        await call(inventory.url, 'POST', '/v1/admin/skus', admin, {
          sku: 'sp1',
          name: 'Split',
          price: PRICE,
          stock: UNITS,
        })
      ).status,
    ).toBe(201);
    await waitFor(
      async () => (await shopDb.pool.query("SELECT 1 FROM skus WHERE sku = 'sp1'")).rowCount === 1 || undefined,
      'the SKU replicated to the shops',
      30_000,
      50,
    );

    const t0 = Date.now();
    const lap = (what: string) => console.log(`split sale: ${what} at ${Date.now() - t0} ms`);
    const ids: string[] = [];
    let shops: StartedProcess[] = [shopA, shopB];
    const buyers = Array.from({ length: BUYERS }, (_, i) => i);
    // Between waves (never while a request is on its way to it): the kills.
    for (let wave = 0; wave < BUYERS; wave += 25) {
      if (wave === 100) {
        // The stock service sits at its first batch's commit: kill it there and start another.
        await waitFor(
          async () => inventory.stdout().includes('STAGE stock.batch.before-commit') || undefined,
          'the first batch at its commit',
          30_000,
          20,
        );
        const results = await stockDb.pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM stock_outbox WHERE order_id <> '-'",
        );
        expect(Number(results.rows[0]?.n)).toBe(0);
        await kill9(inventory.child);
        inventory = await spawnInventory(env, stockDb.url);
        children.push(inventory.child);
      }
      if (wave === 250) {
        await kill9(shopB.child);
        shops = [shopA];
      }
      await Promise.all(
        buyers.slice(wave, wave + 25).map(async (i) => {
          const shop = shops[i % shops.length] as StartedProcess;
          const answer = await call(shop.api, 'POST', '/v1/orders', await token(`b${i}`), { sku: 'sp1' }, `k${i}`);
          expect([answer.status, answer.body.status]).toEqual([202, 'PENDING']);
          ids.push(answer.body.order_id as string);
        }),
      );
    }

    lap('500 placed');
    const statuses = async () =>
      Object.fromEntries(
        (
          await shopDb.pool.query<{ status: string; n: number }>(
            'SELECT status, count(*)::int AS n FROM orders GROUP BY status',
          )
        ).rows.map((r) => [r.status, r.n]),
      );
    await waitFor(async () => !(await statuses()).PENDING || undefined, 'no order PENDING', 60_000, 100);
    lap('all decided');
    expect(await statuses()).toEqual({ CREATED: UNITS, REJECTED: BUYERS - UNITS });

    const winners = (
      await shopDb.pool.query<{ order_id: string; user_id: string }>(
        "SELECT order_id, user_id FROM orders WHERE status = 'CREATED' ORDER BY order_id",
      )
    ).rows;
    // Credits one at a time: they all move money out of the tenant's one funding account.
    await inWaves(winners, 1, async (w, n) => {
      const funded = await call(
        shopA.api,
        'POST',
        `/v1/admin/wallets/${w.user_id}/credits`,
        admin,
        { amount: n < SHORT ? PRICE - 1 : PRICE, reason: 'test top-up' },
        `fund-${w.user_id}`,
      );
      expect(funded.status).toBe(201);
    });
    await inWaves(winners, 5, async (w, n) => {
      const paid = await call(
        shopA.api,
        'POST',
        `/v1/orders/${w.order_id}/pay`,
        await token(w.user_id),
        { method: 'wallet' },
        `pay-${w.user_id}`,
      );
      expect(paid.body.status).toBe(n < SHORT ? 'RELEASING' : 'PAID');
    });
    lap('100 paid');
    await waitFor(async () => !(await statuses()).RELEASING || undefined, 'no order RELEASING', 60_000, 100);
    expect(await statuses()).toEqual({ PAID: UNITS - SHORT, CANCELLED: SHORT, REJECTED: BUYERS - UNITS });

    // The stock service's database: its counters and holds are the truth, and conserved.
    const quiet = async () => {
      const open = await stockDb.pool.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM stock_inbox WHERE applied_at IS NULL)
              + (SELECT count(*) FROM stock_outbox WHERE published_at IS NULL OR dead_at IS NOT NULL) AS n`,
      );
      const shop = await shopDb.pool.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM outbox WHERE published_at IS NULL OR dead_at IS NOT NULL)
              + (SELECT count(*) FROM stock_requests_out WHERE published_at IS NULL OR dead_at IS NOT NULL)
              + (SELECT count(*) FROM stock_mirror_holds m JOIN reservations r USING (tenant_id, request_key) WHERE r.status <> m.synced_status) AS n`,
      );
      if (Number(open.rows[0]?.n) + Number(shop.rows[0]?.n) !== 0) return undefined;
      // Published is not consumed: a confirm or release the broker still holds is in neither outbox
      // nor inbox (SP-03 once read 5 units still held with both outboxes published). So the sale is
      // over when the broker has drained and no unit is held any more; the checks below say the rest.
      if (options.drained && !(await options.drained())) return undefined;
      const held = await stockDb.pool.query<{ n: string }>(
        "SELECT coalesce(sum(held), 0) AS n FROM sku_counters WHERE sku = 'sp1'",
      );
      return Number(held.rows[0]?.n) === 0 || undefined;
    };
    await waitFor(quiet, 'both outboxes published, the broker drained, no unit held', 60_000, 100);
    lap('quiet');
    const sku = await stockDb.pool.query(
      "SELECT total, available, held, confirmed FROM sku_counters WHERE sku = 'sp1'",
    );
    expect(sku.rows[0]).toEqual({ total: UNITS, available: SHORT, held: 0, confirmed: UNITS - SHORT });
    // Each request applied once: one inbox row per request key, one first result per applied request.
    const inbox = await stockDb.pool.query<{ type: string; n: number; applied: number }>(
      `SELECT event_type AS type, count(*)::int AS n, count(applied_at)::int AS applied FROM stock_inbox GROUP BY 1 ORDER BY 1`,
    );
    expect(inbox.rows).toEqual([
      { type: 'STOCK_CONFIRM_REQUESTED', n: UNITS - SHORT, applied: UNITS - SHORT },
      { type: 'STOCK_DEDUCTION_REQUESTED', n: BUYERS, applied: BUYERS },
      { type: 'STOCK_HOLD_RELEASE_REQUESTED', n: SHORT, applied: SHORT },
      { type: 'STOCK_RELEASE_REQUESTED', n: SHORT, applied: SHORT },
    ]);
    const held = await stockDb.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM reservations GROUP BY 1 ORDER BY 1',
    );
    expect(held.rows).toEqual([
      { status: 'CONFIRMED', n: UNITS - SHORT },
      { status: 'RELEASED', n: SHORT },
    ]);
    // Every order decided once by its deduction's result; later copies (replays) recorded, never applied.
    const decided = await shopDb.pool.query<{ n: number; orders: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT order_id)::int AS orders FROM stock_results_in WHERE effect = 'APPLIED' AND event_type IN ('STOCK_RESERVED', 'STOCK_REJECTED')",
    );
    expect(decided.rows[0]).toEqual({ n: BUYERS, orders: BUYERS });
    // Both sides agree hold by hold, and the shop's own reconciliation is clean.
    expect(await listSplitDisagreements(shopDb.pool, stockDb.pool)).toEqual([]);
    const report = await waitForCleanReconciliation(shopA.api, operator);
    expect(report).toMatchObject({ mismatches: [], pending: 0 });
    expect(ids).toHaveLength(BUYERS);
    // Published is not yet consumed: on a busy machine a shop may still be reading late copies of
    // results (every one of them a duplicate by now); the sale is over when the broker is empty too.
    const drained = options.drained;
    if (drained) await waitFor(async () => (await drained()) || undefined, 'the broker drained', 60_000, 200);
    if (options.operatorCli) {
      // The operator's `flashpay reconcile` reaches both databases (the shops never do): clean, exit 0 ...
      const cli = (extra: string[]) =>
        runCli(dirs[0] as string, { ...env, FLASHPAY_CHANNEL_URL: shopA.channel }, [
          'reconcile',
          '--stock-database-url',
          stockDb.url,
          ...extra,
        ]);
      // Every shop's orders, not only shop A's: the shop killed -9 may still be converging its last
      // ones on a loaded machine (pending > 0 exits 1), so the operator waits while orders are
      // pending, and only then: any mismatch or split disagreement fails at once (issue 55: it
      // re-ran for 60 s until a run exited clean, so a wrong answer that went away passed).
      let clean = await cli(['--json']);
      for (const deadline = Date.now() + 60_000; clean.code !== 0 && Date.now() < deadline;) {
        const report = JSON.parse(clean.stdout) as { mismatches: unknown[]; pending: number };
        expect(report, clean.stderr).toMatchObject({ mismatches: [], split_disagreements: [] });
        expect(report.pending, 'exit 1 with nothing mismatched means orders still pending').toBeGreaterThan(0);
        await new Promise((resolve) => setTimeout(resolve, 500));
        clean = await cli(['--json']);
      }
      expect(clean.code, `${clean.stderr}\n${clean.stdout.slice(0, 2000)}`).toBe(0);
      expect(JSON.parse(clean.stdout)).toMatchObject({ ok: true, mismatches: [], split_disagreements: [] });
      // ... and a hold the stock service lost (planted) is named, exit 1.
      const lost = await stockDb.pool.query<{ key: string }>(
        `UPDATE reservations SET status = 'RELEASED'
          WHERE request_key = (SELECT request_key FROM reservations WHERE status = 'CONFIRMED' ORDER BY 1 LIMIT 1)
          RETURNING request_key AS key`,
      );
      const broken = await cli([]);
      expect(broken.code).toBe(1);
      expect(broken.stdout).toContain(
        `split-disagreement ${TENANT} ${lost.rows[0]?.key} shop mirror CONFIRMED, stock service RELEASED`,
      );
    }
    sold = true;
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) await kill9(child);
    try {
      if (sold && options.leftovers) await options.leftovers({ shop: shopDb.pool, stock: stockDb.pool });
    } finally {
      await shopDb.drop();
      await stockDb.drop();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  }
}
