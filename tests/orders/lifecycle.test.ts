import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTx } from '../../src/platform/db.ts';
import { reserve } from '../../src/stock/reservations/repo.ts';
import { tryConfirm, tryRelease } from '../../src/stock/reservations/finish.ts';
import { transition } from '../../src/orders/orders.repo.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { createSku, placeOrder, skuCounters, TENANT } from '../support/fixtures.ts';

describe('order lifecycle, reservations and the guarded state machine', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack.close());

  it('cancel releases the held unit; a second cancel is 409 REJECTED', async () => {
    // Proves CREATED → CANCELLED and the release commit together, and a terminal order stays put.
    await createSku(stack, { sku: 'c1', stock: 3 });
    const token = await stack.token(TENANT, 'canceller');
    const order = await placeOrder(stack, token, 'c-1', { sku: 'c1' });
    expect(await skuCounters(stack, 'c1')).toMatchObject({ available: 2, held: 1 });
    const cancelled = await stack.call('POST', `/v1/orders/${order.body.order_id}/cancel`, { token });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ order_id: order.body.order_id, status: 'CANCELLED' });
    expect(await skuCounters(stack, 'c1')).toMatchObject({ available: 3, held: 0, released: 1 });
    const again = await stack.call('POST', `/v1/orders/${order.body.order_id}/cancel`, { token });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'REJECTED', status: 409, order_status: 'CANCELLED' });
    const view = await stack.call('GET', `/v1/orders/${order.body.order_id}`, { token });
    expect(view.body).toMatchObject({ status: 'CANCELLED', version: 2, reservation: { status: 'RELEASED' } });
    const timeline = await stack.call('GET', `/v1/orders/${order.body.order_id}/timeline`, { token });
    expect(timeline.body.map((t: { from: string | null; to: string }) => [t.from, t.to])).toEqual([
      [null, 'CREATED'],
      ['CREATED', 'CANCELLED'],
    ]);
    expect(
      await countRows(stack.db, 'outbox', "order_id = $1 AND event_type = 'ORDER_CANCELLED'", [order.body.order_id]),
    ).toBe(1);
  });

  it('the expiry sweep releases only HELD reservations past expires_at', async () => {
    // Proves expiry looks at the clock and the reservation status, and at nothing else.
    await createSku(stack, { sku: 'exp', stock: 5, hold_ttl_ms: 60_000 });
    const token = await stack.token(TENANT, 'slow');
    const admin = await stack.token(TENANT, 'ops', 'admin');
    const old = await placeOrder(stack, token, 'e-1', { sku: 'exp' });
    const confirmedEarly = await placeOrder(stack, token, 'e-2', { sku: 'exp' });
    await inTx(stack.db.pool, (tx) => tryConfirm(tx, TENANT, confirmedEarly.body.reservation.key, stack.clock.now()));
    stack.clock.advance(30_000);
    const fresh = await placeOrder(stack, token, 'e-3', { sku: 'exp' });
    stack.clock.advance(31_000); // the first two are now past their expiry, the third is not
    const swept = await stack.call('POST', '/v1/admin/expiry/run', { token: admin });
    expect(swept.body).toEqual({ released: 1 });
    const status = async (id: string) =>
      (await stack.call('GET', `/v1/orders/${id}`, { token })).body.reservation.status;
    expect(await status(old.body.order_id)).toBe('RELEASED');
    expect(await status(confirmedEarly.body.order_id)).toBe('CONFIRMED');
    expect(await status(fresh.body.order_id)).toBe('HELD');
    expect(await skuCounters(stack, 'exp')).toMatchObject({ total: 5, available: 3, held: 1, confirmed: 1 });
    expect((await stack.call('POST', '/v1/admin/expiry/run', { token: admin })).body).toEqual({ released: 0 });
  });

  it('a transition from a wrong prior state is refused and leaves version and log untouched', async () => {
    // Proves the guard is in the UPDATE's WHERE: a stale caller cannot overwrite a newer state.
    await createSku(stack, { sku: 'guard', stock: 2 });
    const token = await stack.token(TENANT, 'g');
    const order = await placeOrder(stack, token, 'guard-1', { sku: 'guard' });
    const id = order.body.order_id;
    const refused = await inTx(stack.db.pool, (tx) =>
      transition(tx, id, 'PAYING', 'UNKNOWN', 'stale caller', stack.clock.now()),
    );
    expect(refused.ok).toBe(false);
    const row = await stack.db.pool.query('SELECT status, version FROM orders WHERE order_id = $1', [id]);
    expect(row.rows[0]).toEqual({ status: 'CREATED', version: 1 });
    expect(await countRows(stack.db, 'order_transitions', 'order_id = $1', [id])).toBe(1);
    await expect(
      inTx(stack.db.pool, (tx) => transition(tx, id, 'CREATED', 'REFUNDED', 'not in the machine', stack.clock.now())),
    ).rejects.toThrow(/not in the state machine/);
  });

  it('reserve is idempotent by key; confirm and release act only on HELD', async () => {
    // Proves the reservation primitives report what they did, so callers never assume.
    await createSku(stack, { sku: 'prim', stock: 2 });
    const now = stack.clock.now();
    const request = { tenantId: TENANT, key: 'prim/k1', userId: 'u', sku: 'prim', quantity: 1 };
    const [first] = await inTx(stack.db.pool, (tx) => reserve(tx, [request], now));
    const [second] = await inTx(stack.db.pool, (tx) => reserve(tx, [request], now));
    expect(first?.outcome).toBe('HELD');
    expect(second).toMatchObject({ outcome: 'HELD', existingStatus: 'HELD' });
    expect(await skuCounters(stack, 'prim')).toMatchObject({ available: 1, held: 1 });
    expect(await inTx(stack.db.pool, (tx) => tryConfirm(tx, TENANT, 'prim/k1', now))).toBe(true);
    expect(await inTx(stack.db.pool, (tx) => tryConfirm(tx, TENANT, 'prim/k1', now))).toBe(false);
    expect(await inTx(stack.db.pool, (tx) => tryRelease(tx, TENANT, 'prim/k1', now))).toBe(false);
    const batch = await inTx(stack.db.pool, (tx) =>
      reserve(
        tx,
        [
          { ...request, key: 'prim/k2' },
          { ...request, key: 'prim/k3' },
        ],
        now,
      ),
    );
    expect(batch.map((r) => r.outcome)).toEqual(['HELD', 'SOLD_OUT']);
    expect(await skuCounters(stack, 'prim')).toMatchObject({ total: 2, available: 0, held: 1, confirmed: 1 });
  });

  it('concurrent reserve, confirm, release and sweeps keep total = available + held + confirmed', async () => {
    // Proves conservation under real concurrency across every reservation primitive.
    await createSku(stack, { sku: 'mix', stock: 20, hold_ttl_ms: 1000 });
    const now = stack.clock.now();
    const work = Array.from({ length: 60 }, async (_, i) => {
      const key = `mix/${i}`;
      const [r] = await inTx(stack.db.pool, (tx) =>
        reserve(tx, [{ tenantId: TENANT, key, userId: `u${i}`, sku: 'mix', quantity: 1 }], now),
      );
      if (r?.outcome !== 'HELD') return;
      if (i % 3 === 0) await inTx(stack.db.pool, (tx) => tryConfirm(tx, TENANT, key, now));
      if (i % 3 === 1) await inTx(stack.db.pool, (tx) => tryRelease(tx, TENANT, key, now));
    });
    stack.clock.advance(2000);
    const admin = await stack.token(TENANT, 'ops', 'admin');
    await Promise.all([
      ...work,
      stack.call('POST', '/v1/admin/expiry/run', { token: admin }),
      stack.call('POST', '/v1/admin/expiry/run', { token: admin }),
    ]);
    const c = await skuCounters(stack, 'mix');
    expect(c.available + c.held + c.confirmed).toBe(20);
    const held = await countRows(stack.db, 'reservations', "sku = 'mix' AND status = 'HELD'");
    const confirmed = await countRows(stack.db, 'reservations', "sku = 'mix' AND status = 'CONFIRMED'");
    expect([c.held, c.confirmed]).toEqual([held, confirmed]);
  });
});
