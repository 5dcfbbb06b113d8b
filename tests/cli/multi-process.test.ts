import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { waitFor } from '../support/poll.ts';
import {
  callApi,
  kill9,
  waitForCleanReconciliation,
  spawnInventory,
  spawnStart,
  type StartedProcess,
} from '../support/process.ts';
import { TEST_EVENTS_SECRET, TEST_JWT_SECRET, TEST_NOTIFY_SECRET } from '../support/stack.ts';
import { everyOf } from '../support/every.ts';

const TENANT = 'mp';
const signer = tokenSigner(TEST_JWT_SECRET);
const token = (user: string, scope: 'buyer' | 'admin' | 'operator' = 'buyer') =>
  signer.sign({ tenantId: TENANT, userId: user, scope });

const call = callApi;

// Seed 004's deployment: two shops (separate ports, one database) and the stock service as its own
// process. Proves each order is decided once, every request applied once, and a shop killed with
// kill -9 mid-sale loses nothing: the other takes over its claims once their lease runs out.
async function runSale(extraEnv: NodeJS.ProcessEnv): Promise<void> {
  const db = await freshDatabase({ poolSize: 2 });
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: db.url,
      FLASHPAY_JWT_SECRET: TEST_JWT_SECRET,
      FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
      FLASHPAY_EVENTS_SECRET: TEST_EVENTS_SECRET,
      FLASHPAY_STOCK_SERVICE: 'external',
      FLASHPAY_ORDER_MODE: 'async',
      FLASHPAY_CLAIM_LEASE_MS: '1000', // the contract's 30 s, shortened so the takeover below is quick
      FLASHPAY_POOL_SIZE: '6',
      FLASHPAY_LOG_LEVEL: 'warn',
      FLASHPAY_RATE_LIMIT_PER_MINUTE: '0',
      ...extraEnv,
    };
    for (let i = 0; i < 2; i++) dirs.push(await mkdtemp(path.join(os.tmpdir(), 'flashpay-mp-')));
    const inventory = await spawnInventory(env, db.url);
    children.push(inventory.child);
    const shopA = await spawnStart(dirs[0] as string, env, ['--port', '0']);
    children.push(shopA.child);
    const shopB = await spawnStart(dirs[1] as string, { ...env, FLASHPAY_CHANNEL_URL: shopA.channel }, ['--port', '0']);
    children.push(shopB.child);
    await sale(db, inventory.url, shopA, shopB);
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) await kill9(child);
    await db.drop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}

async function sale(
  db: TestDatabase,
  inventoryUrl: string,
  shopA: StartedProcess,
  shopB: StartedProcess,
): Promise<void> {
  const operator = await token('ops', 'operator');
  // The SKU admin routes are served by the stock service's own port.
  expect(
    (await call(inventoryUrl, 'POST', '/v1/admin/skus', operator, { sku: 'mp1', name: 'Flash', price: 500, stock: 20 }))
      .status,
  ).toBe(201);
  const place = async (i: number, shop: StartedProcess) => {
    const answer = await call(shop.api, 'POST', '/v1/orders', await token(`b${i}`), { sku: 'mp1' }, `k${i}`);
    expect([answer.status, answer.body.status]).toEqual([202, 'PENDING']);
    return answer.body.order_id as string;
  };
  for (let batch = 0; batch < 5; batch++) {
    // Shop B dies after the second batch, its claims (if any) still leased; the rest go to shop A.
    if (batch === 2) await kill9(shopB.child);
    const shops = batch < 2 ? [shopA, shopB] : [shopA];
    await Promise.all(
      Array.from({ length: 20 }, (_, j) => place(batch * 20 + j, shops[j % shops.length] as StartedProcess)),
    );
  }
  const statuses = async () =>
    (
      await db.pool.query<{ status: string; n: number }>(
        'SELECT status, count(*)::int AS n FROM orders GROUP BY status',
      )
    ).rows;
  await waitFor(
    async () => everyOf(await statuses(), (r) => r.status !== 'PENDING') || undefined,
    'no order PENDING',
    60_000,
    100,
  );
  expect(Object.fromEntries((await statuses()).map((r) => [r.status, r.n]))).toEqual({ CREATED: 20, REJECTED: 80 });
  const applied = await db.pool.query<{ n: number; total: number }>(
    'SELECT count(*)::int AS n, count(*) FILTER (WHERE applied_at IS NOT NULL)::int AS total FROM stock_inbox',
  );
  expect(applied.rows[0]).toEqual({ n: 100, total: 100 });
  const results = await db.pool.query<{ n: number }>(
    "SELECT count(DISTINCT order_id)::int AS n FROM stock_results_in WHERE effect = 'APPLIED'",
  );
  expect(results.rows[0]?.n).toBe(100);
  const sku = await call(inventoryUrl, 'GET', '/v1/admin/skus/mp1', await token('ops', 'admin'));
  expect(sku.body).toMatchObject({ total: 20, available: 0, held: 20 });

  // Five winners pay with too little (RELEASING → CANCELLED once the stock service released), five with enough.
  const winners = (
    await db.pool.query<{ order_id: string; user_id: string }>(
      "SELECT order_id, user_id FROM orders WHERE status = 'CREATED' ORDER BY order_id LIMIT 10",
    )
  ).rows;
  for (const [n, w] of winners.entries()) {
    expect(
      (
        await call(
          shopA.api,
          'POST',
          `/v1/admin/wallets/${w.user_id}/credits`,
          await token('ops', 'admin'),
          { amount: n < 5 ? 100 : 500, reason: 'test top-up' },
          `fund-${w.user_id}`,
        )
      ).status,
    ).toBe(201);
    const paid = await call(
      shopA.api,
      'POST',
      `/v1/orders/${w.order_id}/pay`,
      await token(w.user_id),
      { method: 'wallet' },
      `pay-${w.user_id}`,
    );
    expect(paid.body.status).toBe(n < 5 ? 'RELEASING' : 'PAID');
  }
  await waitFor(
    async () => everyOf(await statuses(), (r) => r.status !== 'RELEASING') || undefined,
    'no order RELEASING',
    60_000,
    100,
  );
  expect(Object.fromEntries((await statuses()).map((r) => [r.status, r.n]))).toEqual({
    CREATED: 10,
    REJECTED: 80,
    PAID: 5,
    CANCELLED: 5,
  });
  expect((await call(inventoryUrl, 'GET', '/v1/admin/skus/mp1', await token('ops', 'admin'))).body).toMatchObject({
    available: 5,
    held: 10,
    confirmed: 5,
  });
  const report = await waitForCleanReconciliation(shopA.api, operator);
  expect(report).toMatchObject({ mismatches: [], pending: 0 });
  // Every event and stock message is delivered. Rows the killed shop had claimed (a relay claims its
  // next batch ahead, the stock pump up to 1,000) wait out their 30 s lease before shop A takes them.
  const unpublished = async () =>
    Number(
      (
        await db.pool.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM outbox WHERE published_at IS NULL OR dead_at IS NOT NULL)
                + (SELECT count(*) FROM stock_requests_out WHERE published_at IS NULL OR dead_at IS NOT NULL)
                + (SELECT count(*) FROM stock_outbox WHERE published_at IS NULL OR dead_at IS NOT NULL) AS n`,
        )
      ).rows[0]?.n,
    );
  await waitFor(async () => (await unpublished()) === 0 || undefined, 'every row published', 60_000, 250);
  const dead = await db.pool.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL)
          + (SELECT count(*) FROM stock_requests_out WHERE dead_at IS NOT NULL)
          + (SELECT count(*) FROM stock_outbox WHERE dead_at IS NOT NULL) AS n`,
  );
  expect(Number(dead.rows[0]?.n)).toBe(0);
}

describe('three processes: two `flashpay start` on one database and `flashpay inventory`', () => {
  it('MP-01 (database transport) 100 buyers for 20 units across both shops, one shop killed -9 mid-sale: 20 held, 80 REJECTED, each request applied once; wallets too low released; reconciliation clean', async () => {
    await runSale({});
  }, 180_000);
  // The same sale over RabbitMQ and JetStream: tests/cli/split-amqp.test.ts and split-jetstream.test.ts (SP-02,
  // SP-03) run it with the stock service on its own database, through the same adapters, at 500 buyers.
});
