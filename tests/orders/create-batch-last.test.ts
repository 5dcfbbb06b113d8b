import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tryFastBatch, type FastBuyer } from '../../src/orders/create/batch.fast.repo.ts';
import { armFaultPoint } from '../../src/platform/faultpoints.ts';
import { createdResponse } from '../../src/orders/create/one.ts';
import { buyBatched, inFlight } from '../support/create-batch.ts';
import { createSku, skuCounters, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { everyOf } from '../support/every.ts';

// The one-statement batch takes the SKU's row lock LAST (orders/create/batch.fast.repo.ts): it decides on
// a plain read, writes every buyer's rows and keys, and decrements at the end; a row that then has
// fewer units than it granted fails the statement whole (FPB01) and the batch is decided again on
// the locked row by the transactional batch.

const bodyOf = (text: string) => JSON.parse(text) as { order_id?: string; code?: string };

function fastBuyer(id: string): FastBuyer {
  const orderId = `ord_${id}`;
  return {
    userId: `u-${id}`,
    key: id,
    digest: 'd'.repeat(64),
    orderId,
    reservationKey: `${orderId}/r1`,
    location: `/v1/orders/${orderId}`,
  };
}

describe('the one-statement batch locks the SKU row last', () => {
  let stack: Stack;
  let other: pg.Pool;
  beforeAll(async () => {
    stack = await startStack();
    other = new pg.Pool({ connectionString: stack.db.url, max: 3 });
  });
  afterAll(async () => {
    await other.end();
    await stack.close();
  });

  const definition = (sku: string) => ({ name: `SKU ${sku}`, price: 700, holdTtlMs: 600_000, perUserLimit: null });

  /** Until the statement's backend waits for a row lock (the SKU row, held by `locker`). */
  async function untilWaitingOnRow() {
    for (let i = 0; i < 200; i++) {
      const waiting = await other.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND starts_with(query, 'WITH cfg AS (SELECT set_config(''lock_timeout''')`,
      );
      if ((waiting.rows[0]?.n ?? 0) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the batch statement never waited for the SKU row');
  }

  it('CB-L1 the keys are claimed before the SKU row is locked: a same-key request elsewhere waits on the batch', async () => {
    await createSku(stack, { sku: 'last-order', price: 700, stock: 5, hold_ttl_ms: 600_000 });
    const locker = await other.connect();
    const rival = await other.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM skus WHERE sku = 'last-order' FOR UPDATE`);
      const buyers = [fastBuyer('cbl1-1'), fastBuyer('cbl1-2')];
      const attempt = tryFastBatch(stack.db.pool, {
        tenantId: TENANT,
        sku: 'last-order',
        definition: definition('last-order'),
        buyers,
        expiresAt: new Date(Date.now() + 600_000),
        createdParts: ['{"order_id":"', '"}'],
        refusalBody: '{}',
        now: new Date(),
        lockTimeoutMs: 10_000,
      });
      await untilWaitingOnRow();
      // The batch's key rows exist (uncommitted) while it waits for the SKU row: another process's
      // claim of the same key waits for the batch instead of slipping in before it.
      await rival.query(`SET lock_timeout = '300ms'`);
      await expect(
        rival.query(
          `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, created_at)
           VALUES ($1, 'u-cbl1-1', 'create_order', 'cbl1-1', $2, 'PROCESSING', now())`,
          [TENANT, 'e'.repeat(64)],
        ),
      ).rejects.toMatchObject({ code: '55P03' });
      await locker.query('COMMIT');
      const outcome = await attempt;
      expect(outcome).toMatchObject({ kind: 'applied', granted: 2, availableBefore: 5, availableAfter: 3 });
    } finally {
      await rival.query('RESET lock_timeout');
      rival.release();
      locker.release();
    }
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['last-order'])).toBe(2);
    expect(await skuCounters(stack, 'last-order')).toMatchObject({ total: 5, available: 3, held: 2 });
  });

  it('CB-L2 units taken after the read: the statement writes nothing (FPB01), counters untouched', async () => {
    await createSku(stack, { sku: 'last-short', price: 700, stock: 5, hold_ttl_ms: 600_000 });
    const locker = await other.connect();
    try {
      await locker.query('BEGIN');
      // Another process takes 4 of the 5 units; the batch's plain read still sees 5.
      await locker.query(`UPDATE skus SET available = available - 4, held = held + 4 WHERE sku = 'last-short'`);
      const attempt = tryFastBatch(stack.db.pool, {
        tenantId: TENANT,
        sku: 'last-short',
        definition: definition('last-short'),
        buyers: [fastBuyer('cbl2-1'), fastBuyer('cbl2-2'), fastBuyer('cbl2-3')],
        expiresAt: new Date(Date.now() + 600_000),
        createdParts: ['{"order_id":"', '"}'],
        refusalBody: '{}',
        now: new Date(),
        lockTimeoutMs: 10_000,
      });
      await untilWaitingOnRow();
      await locker.query('COMMIT');
      expect(await attempt).toEqual({ kind: 'short' });
    } finally {
      locker.release();
    }
    expect(await countRows(stack.db, 'idempotency_keys', `idempotency_key LIKE 'cbl2-%'`)).toBe(0);
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['last-short'])).toBe(0);
    expect(await countRows(stack.db, 'reservations', 'sku = $1', ['last-short'])).toBe(0);
    expect(await skuCounters(stack, 'last-short')).toMatchObject({ total: 5, available: 1, held: 4 });
  });

  it('CB-L3 a short batch is decided again on the locked row: exactly the units left, in arrival order', async () => {
    await createSku(stack, { sku: 'last-retry', stock: 6 });
    const transactional: number[] = [];
    const disarm = armFaultPoint('create.batch.before-commit', async (detail) => {
      if (detail.sku === 'last-retry') transactional.push(Number(detail.batch));
    });
    const locker = await other.connect();
    try {
      // The first batch reads the definition, then runs as one statement, like every one after it.
      expect((await buyBatched(stack, TENANT, 'warm', 'cbl3-warm', 'last-retry')).status).toBe(201);
      expect(transactional).toEqual([]);
      await locker.query('BEGIN');
      await locker.query(`UPDATE skus SET available = available - 3, held = held + 3 WHERE sku = 'last-retry'`);
      const buyers = Array.from({ length: 4 }, (_, i) => buyBatched(stack, TENANT, `r${i}`, `cbl3-${i}`, 'last-retry'));
      await untilWaitingOnRow();
      await locker.query('COMMIT');
      const answers = await Promise.all(buyers);
      expect(answers.map((a) => a.status)).toEqual([201, 201, 409, 409]);
      expect(everyOf(answers.slice(2), (a) => bodyOf(a.body).code === 'SOLD_OUT')).toBe(true);
      // The statement granted 4 on its read of 5, found 2 on the row, and wrote nothing; the
      // transactional batch then decided the 4 buyers on the locked row.
      expect(transactional).toEqual([4]);
      for (const [i, first] of answers.entries())
        expect(await buyBatched(stack, TENANT, `r${i}`, `cbl3-${i}`, 'last-retry')).toMatchObject({
          status: first.status,
          body: first.body,
          replayed: true,
        });
    } finally {
      disarm();
      locker.release();
    }
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['last-retry'])).toBe(3);
    expect(await skuCounters(stack, 'last-retry')).toMatchObject({ total: 6, available: 0, held: 6 });
  });

  it('CB-L4 one 201 template per batch: each buyer gets, and its key stores, the bytes the per-buyer build gives', async () => {
    const name = 'Ünïcode "quoted" \\ back\\u0000slash / 🎉 ord_';
    await createSku(stack, { sku: 'last-bytes', name, price: 4321, stock: 40 });
    let transactional = 0;
    const disarm = armFaultPoint('create.batch.before-commit', async (detail) => {
      if (detail.sku === 'last-bytes') transactional++;
    });
    await buyBatched(stack, TENANT, 'warm', 'cbl4-warm', 'last-bytes'); // the definition is read
    const answers = await inFlight(
      Array.from({ length: 30 }, (_, i) => () => buyBatched(stack, TENANT, `t${i}`, `cbl4-${i}`, 'last-bytes')),
      30,
    ).finally(disarm);
    expect(transactional).toBe(0); // the warm-up and the 30 went through the one-statement form
    expect(everyOf(answers, (a) => a.status === 201)).toBe(true);
    const stored = await stack.db.pool.query<{ key: string; body: string; location: string; expires_at: Date }>(
      `SELECT k.idempotency_key AS key, k.response_body AS body, k.response_location AS location, r.expires_at
       FROM idempotency_keys k JOIN orders o ON o.order_id = k.response_body::jsonb->>'order_id'
       JOIN reservations r ON r.tenant_id = o.tenant_id AND r.request_key = o.reservation_key
       WHERE k.idempotency_key LIKE 'cbl4-%' AND k.idempotency_key <> 'cbl4-warm'`,
    );
    const byKey = new Map(stored.rows.map((r) => [r.key, r]));
    expect(byKey.size).toBe(30);
    for (const [i, answer] of answers.entries()) {
      const row = byKey.get(`cbl4-${i}`)!;
      expect(answer.body).toBe(row.body);
      expect(answer.location).toBe(row.location);
      // The body one buyer alone would get for this order (orders/create/one.ts), byte for byte.
      const orderId = bodyOf(row.body).order_id!;
      const reservationKey = `${orderId}/r1`;
      const alone = createdResponse(
        { orderId, status: 'CREATED', sku: 'last-bytes', quantity: 1, amount: 4321 },
        [{ lineNo: 1, sku: 'last-bytes', name, unitPrice: 4321, quantity: 1, amount: 4321, reservationKey }],
        [
          {
            tenantId: TENANT,
            key: reservationKey,
            userId: `t${i}`,
            sku: 'last-bytes',
            quantity: 1,
            status: 'HELD',
            expiresAt: row.expires_at,
          },
        ],
      );
      expect(row.body).toBe(alone.body);
      expect(row.location).toBe(alone.location);
    }
    expect(await countRows(stack.db, 'orders', 'sku = $1', ['last-bytes'])).toBe(31);
  });
});
