import { MAX_ORDER_AMOUNT_MINOR } from '../../src/platform/money.ts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMarkedSoldOut } from '../../src/orders/index.ts';
import { armMutation } from '../../src/platform/mutations.ts';
import { knownDefinition } from '../../src/orders/create/batch.fast.ts';
import { tryFastBatch } from '../../src/orders/create/batch.fast.repo.ts';
import { armFaultPoint } from '../../src/platform/faultpoints.ts';
import { buyBatched, crashCreateBatch, inFlight } from '../support/create-batch.ts';
import { createSku, placeOrder, skuCounters, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { keyedDeps } from '../../src/app.deps.ts';
import { requestDigest } from '../../src/idempotency/index.ts';
import { createBatched } from '../../src/orders/create/batch.ts';
import { everyOf } from '../support/every.ts';

// The group commit per SKU (src/orders/create/batch.ts) and its sold-out fast path. Buyers go
// through the batcher directly (keyed exactly as POST /v1/orders keys them) where thousands are
// needed; every other create test of the suite goes through it over HTTP.

const bodyOf = (text: string) => JSON.parse(text) as { order_id?: string; code?: string };

describe('group commit of creates per SKU', () => {
  let stack: Stack;
  let other: pg.Pool;
  beforeAll(async () => {
    stack = await startStack();
    // Another process's connection: it changes stock behind this process's back.
    other = new pg.Pool({ connectionString: stack.db.url, max: 2 });
  });
  afterAll(async () => {
    await other.end();
    await stack.close();
  });

  it('CB-01 10,000 buyers for 1,000 units: exactly 1,000 orders, and each key replays its own answer', async () => {
    await createSku(stack, { sku: 'flash', stock: 1_000 });
    const buyers = Array.from({ length: 10_000 }, (_, i) => ({ user: `b${i % 2_500}`, key: `cb1-${i}` }));
    const first = await inFlight(
      buyers.map((b) => () => buyBatched(stack, TENANT, b.user, b.key, 'flash')),
      512,
    );
    expect(first.filter((a) => a.status === 201)).toHaveLength(1_000);
    expect(first.filter((a) => a.status === 409 && bodyOf(a.body).code === 'SOLD_OUT')).toHaveLength(9_000);
    expect(everyOf(first, (a) => !a.replayed)).toBe(true);
    expect(new Set(first.filter((a) => a.status === 201).map((a) => bodyOf(a.body).order_id)).size).toBe(1_000);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['flash'])).toBe(1_000);
    expect(await skuCounters(stack, 'flash')).toMatchObject({ total: 1_000, available: 0, held: 1_000 });
    // Every 201 names an order of its own buyer; every key is DONE with what its buyer was told.
    const mismatched = await stack.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM idempotency_keys k WHERE k.idempotency_key LIKE 'cb1-%' AND (k.state <> 'DONE'
         OR (k.response_status = 201 AND NOT EXISTS (SELECT 1 FROM orders o
               WHERE o.order_id = k.response_body::jsonb->>'order_id' AND o.user_id = k.user_id)))`,
    );
    expect(mismatched.rows[0]?.n).toBe(0);
    const again = await inFlight(
      buyers.map((b) => () => buyBatched(stack, TENANT, b.user, b.key, 'flash')),
      512,
    );
    for (const [i, answer] of again.entries()) {
      expect(answer.replayed).toBe(true);
      expect(answer.status).toBe(first[i]?.status);
      expect(answer.body).toBe(first[i]?.body);
    }
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['flash'])).toBe(1_000);
    // ~17 s on a quiet 2-core machine; the bound is for a machine shared with other suites.
  }, 120_000);

  it('CB-02 the per-user limit holds inside one batch: two buyers of one user in it, in arrival order', async () => {
    await createSku(stack, { sku: 'limited-batch', stock: 100, per_user_limit: 2 });
    const sizes: number[] = [];
    const disarm = armFaultPoint('create.batch.before-commit', async (detail) => {
      if (detail.sku === 'limited-batch') sizes.push(detail.batch as number);
    });
    try {
      // All in one turn of the event loop: one batch.
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          buyBatched(stack, TENANT, i % 2 === 0 ? 'greedy' : `calm-${i}`, `cb2-${i}`, 'limited-batch'),
        ),
      );
      expect(sizes).toEqual([10]);
      const greedy = answers.filter((_, i) => i % 2 === 0);
      expect(greedy.map((a) => a.status)).toEqual([201, 201, 409, 409, 409]);
      expect(everyOf(greedy.slice(2), (a) => bodyOf(a.body).code === 'USER_LIMIT')).toBe(true);
      expect(
        everyOf(
          answers.filter((_, i) => i % 2 === 1),
          (a) => a.status === 201,
        ),
      ).toBe(true);
      const later = await buyBatched(stack, TENANT, 'greedy', 'cb2-later', 'limited-batch');
      expect(bodyOf(later.body).code).toBe('USER_LIMIT');
    } finally {
      disarm();
    }
    const holding = await stack.db.pool.query<{ quantity: number }>(
      `SELECT quantity FROM user_holdings WHERE sku = 'limited-batch' AND user_id = 'greedy'`,
    );
    expect(holding.rows[0]?.quantity).toBe(2);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['limited-batch'])).toBe(7);
    expect(await skuCounters(stack, 'limited-batch')).toMatchObject({ total: 100, available: 93, held: 7 });
  });

  it('CB-03 a same-key duplicate in one batch makes one order; the second answer is its replay', async () => {
    await createSku(stack, { sku: 'dup-batch', stock: 10 });
    const [a, b] = await Promise.all([
      buyBatched(stack, TENANT, 'twice', 'cb3', 'dup-batch'),
      buyBatched(stack, TENANT, 'twice', 'cb3', 'dup-batch'),
    ]);
    expect(a?.body).toBe(b?.body);
    expect([a?.replayed, b?.replayed].sort()).toEqual([false, true]);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['dup-batch'])).toBe(1);
  });

  it('CB-04 after sell-out, refusals take no SKU row lock and replay their 409 by key', async () => {
    await createSku(stack, { sku: 'gone', stock: 3 });
    const sale = await Promise.all(
      Array.from({ length: 20 }, (_, i) => buyBatched(stack, TENANT, `s${i}`, `cb4-${i}`, 'gone')),
    );
    expect(sale.filter((a) => a.status === 201)).toHaveLength(3);
    expect(isMarkedSoldOut(stack.db.pool, TENANT, 'gone')).toBe(true);
    // Another connection holds the SKU's row lock for the whole burst of refusals.
    const locker = await other.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM skus WHERE sku = 'gone' FOR UPDATE`);
      const refusals = await Promise.all(
        Array.from({ length: 50 }, (_, i) => buyBatched(stack, TENANT, `late${i}`, `cb4-late-${i}`, 'gone')),
      );
      expect(everyOf(refusals, (a) => a.status === 409 && bodyOf(a.body).code === 'SOLD_OUT' && !a.replayed)).toBe(
        true,
      );
      await locker.query('COMMIT');
      const replays = await Promise.all(
        Array.from({ length: 50 }, (_, i) => buyBatched(stack, TENANT, `late${i}`, `cb4-late-${i}`, 'gone')),
      );
      expect(everyOf(replays, (a, i) => a.replayed && a.body === refusals[i]?.body)).toBe(true);
    } finally {
      locker.release();
    }
    // Over HTTP too: the stored refusal replays with its header.
    const token = await stack.token(TENANT, 'late0');
    const http = await placeOrder(stack, token, 'cb4-late-0', { sku: 'gone' });
    expect(http.status).toBe(409);
    expect(http.headers.get('idempotent-replayed')).toBe('true');
    expect(await countRows(stack.db, 'idempotency_keys', `idempotency_key LIKE 'cb4-late-%' AND state = 'DONE'`)).toBe(
      50,
    );
  });

  it('CB-05 no false SOLD_OUT when units come back from another connection or a cancel (C29-14 style)', async () => {
    await createSku(stack, { sku: 'comeback', stock: 1 });
    await buyBatched(stack, TENANT, 'first', 'cb5-first', 'comeback');
    for (let round = 0; round < 30; round++) {
      await buyBatched(stack, TENANT, `mark-${round}`, `cb5-mark-${round}`, 'comeback'); // a refusal: marked
      expect(isMarkedSoldOut(stack.db.pool, TENANT, 'comeback')).toBe(true);
      // Refusals in flight while the unit comes back: they may or may not get it (arrival order).
      const background = Array.from({ length: 16 }, (_, i) =>
        buyBatched(stack, TENANT, `bg-${round}-${i}`, `cb5-bg-${round}-${i}`, 'comeback'),
      );
      if (round % 2 === 0) {
        // Another process restocks one unit and commits.
        await other.query(
          `UPDATE skus SET total = total + 1, available = available + 1 WHERE tenant_id = $1 AND sku = 'comeback'`,
          [TENANT],
        );
      } else {
        // This process cancels an order: its unit is back on sale.
        const order = await stack.db.pool.query<{ order_id: string; user_id: string }>(
          `SELECT order_id, user_id FROM orders WHERE sku = 'comeback' AND status = 'CREATED' LIMIT 1`,
        );
        const row = order.rows[0]!;
        const cancelled = await stack.call('POST', `/v1/orders/${row.order_id}/cancel`, {
          token: await stack.token(TENANT, row.user_id),
        });
        expect(cancelled.status).toBe(200);
      }
      // Committed: from here on, a refusal of a buyer who arrives now would be false.
      const probe = buyBatched(stack, TENANT, `probe-${round}`, `cb5-probe-${round}`, 'comeback');
      const answers = await Promise.all([...background, probe]);
      expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
      const counters = await skuCounters(stack, 'comeback');
      expect(counters.available).toBe(0);
      expect(counters.total).toBe(counters.available + counters.held + counters.confirmed);
    }
  }, 60_000);

  it('CB-05b control: with the wave trusting the mark without its read (orders.create.sold-out-read), a unit back on sale is refused as SOLD_OUT', async () => {
    await createSku(stack, { sku: 'comeback-b', stock: 1 });
    expect((await buyBatched(stack, TENANT, 'first', 'cb5b-first', 'comeback-b')).status).toBe(201);
    expect((await buyBatched(stack, TENANT, 'mark', 'cb5b-mark', 'comeback-b')).status).toBe(409); // marked
    expect(isMarkedSoldOut(stack.db.pool, TENANT, 'comeback-b')).toBe(true);
    await other.query(
      `UPDATE skus SET total = total + 1, available = available + 1 WHERE tenant_id = $1 AND sku = 'comeback-b'`,
      [TENANT],
    );
    const disarm = armMutation('orders.create.sold-out-read', ['comeback-b']);
    let refused;
    try {
      refused = await buyBatched(stack, TENANT, 'probe', 'cb5b-probe', 'comeback-b');
    } finally {
      disarm();
    }
    // CB-05's check fires: a false SOLD_OUT while the unit is on sale by committed state.
    expect([refused.status, JSON.parse(refused.body).code]).toEqual([409, 'SOLD_OUT']);
    expect((await skuCounters(stack, 'comeback-b')).available).toBe(1);
    // With the read: the next buyer gets the unit.
    expect((await buyBatched(stack, TENANT, 'probe2', 'cb5b-probe2', 'comeback-b')).status).toBe(201);
  });

  it('CB-06 kill -9 mid-batch: answered orders stay, nothing of the batch is left, its buyers retry cleanly', async () => {
    // A per-user limit keeps every batch of this SKU on the transactional path, the one with a
    // moment between its writes and its COMMIT (the one-statement form has none). Each buyer buys one.
    await createSku(stack, { sku: 'k9-batch', stock: 10, per_user_limit: 2 });
    const answered = await Promise.all(
      Array.from({ length: 3 }, (_, i) => buyBatched(stack, TENANT, `early${i}`, `cb6-early-${i}`, 'k9-batch')),
    );
    expect(everyOf(answered, (a) => a.status === 201)).toBe(true);
    const doomed = Array.from({ length: 8 }, (_, i) => ({ userId: `doomed${i}`, key: `cb6-doomed-${i}` }));
    await crashCreateBatch(stack.db.url, { tenantId: TENANT, sku: 'k9-batch', buyers: doomed });

    expect(await countRows(stack.db, 'orders', 'sku = $1', ['k9-batch'])).toBe(3);
    expect(await countRows(stack.db, 'reservations', 'sku = $1', ['k9-batch'])).toBe(3);
    expect(await countRows(stack.db, 'idempotency_keys', `idempotency_key LIKE 'cb6-doomed-%'`)).toBe(0);
    expect(await skuCounters(stack, 'k9-batch')).toMatchObject({ total: 10, available: 7, held: 3 });
    for (const [i, first] of answered.entries()) {
      const replay = await buyBatched(stack, TENANT, `early${i}`, `cb6-early-${i}`, 'k9-batch');
      expect(replay).toMatchObject({ status: 201, body: first.body, replayed: true });
    }
    const retried = await Promise.all(doomed.map((d) => buyBatched(stack, TENANT, d.userId, d.key, 'k9-batch')));
    expect(retried.filter((a) => a.status === 201)).toHaveLength(7);
    expect(retried.filter((a) => bodyOf(a.body).code === 'SOLD_OUT')).toHaveLength(1);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['k9-batch'])).toBe(10);
    expect(await skuCounters(stack, 'k9-batch')).toMatchObject({ total: 10, available: 0, held: 10 });
  }, 60_000);

  it('CB-07 the SKU definition cache: a price or name changed by another instance is seen by the next batch', async () => {
    // A second app instance on the same database, with its own pool (its own cache).
    const poolB = new pg.Pool({ connectionString: stack.db.url, max: 4 });
    const b = await startStack({ db: { ...stack.db, pool: poolB } });
    const transactional: string[] = [];
    const disarm = armFaultPoint('create.batch.before-commit', async (detail) => {
      if (detail.sku === 'repriced') transactional.push(String(detail.batch));
    });
    const buyOn = (on: Stack, user: string, key: string) =>
      createBatched(keyedDeps(on.deps), {
        principal: { tenantId: TENANT, userId: user, scope: 'buyer' },
        line: { sku: 'repriced', quantity: 1 },
        scope: { tenantId: TENANT, userId: user, operation: 'create_order', key },
        digest: requestDigest('create_order', {}, { sku: 'repriced', quantity: 1 }),
        maxAmountMinor: MAX_ORDER_AMOUNT_MINOR,
      });
    const lineOf = async (answer: { body: string }) => {
      const orderId = bodyOf(answer.body).order_id;
      const row = await stack.db.pool.query<{ name: string; unit_price: number; amount: number }>(
        'SELECT l.name, l.unit_price, o.amount FROM order_lines l JOIN orders o USING (order_id) WHERE order_id = $1',
        [orderId],
      );
      const body = JSON.parse(answer.body) as { amount: number; lines: { name: string; unit_price: number }[] };
      return { ...row.rows[0], answered: { amount: body.amount, name: body.lines[0]?.name } };
    };
    try {
      await createSku(stack, { sku: 'repriced', name: 'Old name', price: 1000, stock: 50 });
      expect(knownDefinition(stack.db.pool, TENANT, 'repriced')).toBeUndefined();
      const first = await buyOn(stack, 'p1', 'cb7-1'); // unknown to A: read first, then one statement
      const second = await buyOn(stack, 'p2', 'cb7-2'); // known: one statement
      expect(transactional).toHaveLength(0);
      expect(knownDefinition(stack.db.pool, TENANT, 'repriced')).toMatchObject({ price: 1000, name: 'Old name' });
      for (const answer of [first, second])
        expect(await lineOf(answer)).toMatchObject({ unit_price: 1000, amount: 1000, answered: { amount: 1000 } });

      const adminB = await b.token(TENANT, 'ops', 'admin');
      const patched = await b.call('PATCH', '/v1/admin/skus/repriced', { token: adminB, body: { price: 1500 } });
      expect(patched.status).toBe(200);
      // A's cache says 1000: its statement sees 1500 on the locked row, writes nothing, and the
      // batch runs on the transactional path with the new price.
      const third = await buyOn(stack, 'p3', 'cb7-3');
      expect(await lineOf(third)).toMatchObject({ unit_price: 1500, amount: 1500, answered: { amount: 1500 } });
      expect(transactional).toHaveLength(1);
      const fourth = await buyOn(stack, 'p4', 'cb7-4'); // the cache learnt 1500: one statement again
      expect(await lineOf(fourth)).toMatchObject({ unit_price: 1500, amount: 1500 });
      expect(transactional).toHaveLength(1);

      // The other way round: B caches, A renames.
      await buyOn(b, 'p5', 'cb7-5');
      const adminA = await stack.token(TENANT, 'ops', 'admin');
      const renamed = await stack.call('PATCH', '/v1/admin/skus/repriced', {
        token: adminA,
        body: { name: 'New name' },
      });
      expect(renamed.status).toBe(200);
      const sixth = await buyOn(b, 'p6', 'cb7-6');
      expect(await lineOf(sixth)).toMatchObject({ name: 'New name', unit_price: 1500, answered: { name: 'New name' } });
      expect(await skuCounters(stack, 'repriced')).toMatchObject({ total: 50, available: 44, held: 6 });
    } finally {
      disarm();
      await b.close();
      await poolB.end();
    }
  });

  it('CB-08 the one-statement batch waits for the SKU row lock at most its lock timeout, and writes nothing then', async () => {
    await createSku(stack, { sku: 'locked-fast', price: 700, stock: 5, hold_ttl_ms: 600_000 });
    const locker = await other.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM skus WHERE sku = 'locked-fast' FOR UPDATE`);
      const started = Date.now();
      const attempt = tryFastBatch(stack.db.pool, {
        tenantId: TENANT,
        sku: 'locked-fast',
        definition: { name: 'SKU locked-fast', price: 700, holdTtlMs: 600_000, perUserLimit: null },
        buyers: [
          {
            userId: 'w1',
            key: 'cb8-1',
            digest: 'd'.repeat(64),
            orderId: 'ord_cb8_1',
            reservationKey: 'ord_cb8_1/r1',
            location: '/v1/orders/ord_cb8_1',
          },
        ],
        expiresAt: new Date(Date.now() + 600_000),
        createdParts: ['{}'],
        refusalBody: '{}',
        now: new Date(),
        lockTimeoutMs: 200,
      });
      await expect(attempt).rejects.toMatchObject({ code: '55P03' });
      expect(Date.now() - started).toBeLessThan(4_000);
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    expect(await countRows(stack.db, 'idempotency_keys', `idempotency_key = 'cb8-1'`)).toBe(0);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['locked-fast'])).toBe(0);
    expect(await skuCounters(stack, 'locked-fast')).toMatchObject({ total: 5, available: 5, held: 0 });
  });
});
