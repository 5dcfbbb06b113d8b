import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, skuCounters, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { createStockPump } from '../../src/orders/queued/pipeline.ts';
import { stockPumpFor } from '../../src/orders/queued/pump.ts';
import { claimStockRequests, markStockRequestsSent } from '../../src/orders/index.ts';
import { everyOf } from '../support/every.ts';

// Queued orders (seed 004 part 2): 202 PENDING, a stock service behind the database-carried queue,
// results applied through the decider. Every test drives the pump's runOnce/drain directly.
describe('queued orders: Prefer: respond-async → 202 PENDING → CREATED | REJECTED', () => {
  let s: Stack;
  let operator: string;
  beforeAll(async () => {
    s = await startStack();
    operator = await s.token(TENANT, 'ops', 'operator');
  });
  afterAll(async () => s.close());

  const pump = () => stockPumpFor(s.deps);
  const queue = (token: string, key: string, body: Record<string, unknown>) =>
    s.call('POST', '/v1/orders', { token, body, headers: { 'idempotency-key': key, prefer: 'respond-async' } });
  const status = async (orderId: string) =>
    (await s.db.pool.query<{ status: string }>('SELECT status FROM orders WHERE order_id = $1', [orderId])).rows[0]
      ?.status;

  it('Q-01 202 PENDING with Location and Preference-Applied; nothing reserved until the stock service answers; the replay is byte for byte', async () => {
    await createSku(s, { sku: 'q1', stock: 5, price: 700 });
    const buyer = await s.token(TENANT, 'q1-user');
    const first = await queue(buyer, 'q1-key', { sku: 'q1', quantity: 2 });
    expect([first.status, first.body.status, first.body.amount]).toEqual([202, 'PENDING', 1400]);
    expect(first.headers.get('preference-applied')).toBe('respond-async');
    expect(first.headers.get('location')).toBe(`/v1/orders/${first.body.order_id}`);
    expect(first.body.lines).toEqual([{ sku: 'q1', name: 'SKU q1', unit_price: 700, quantity: 2, amount: 1400 }]);
    expect(await countRows(s.db, 'reservations', "user_id = 'q1-user'")).toBe(0);
    expect((await skuCounters(s, 'q1')).available).toBe(5);
    const replay = await queue(buyer, 'q1-key', { sku: 'q1', quantity: 2 });
    expect([replay.status, replay.text, replay.headers.get('idempotent-replayed')]).toEqual([202, first.text, 'true']);

    const drained = await s.call('POST', '/v1/admin/stock/drain', { token: operator });
    expect(drained.status).toBe(200);
    const view = await s.call('GET', `/v1/orders/${first.body.order_id}`, { token: buyer });
    expect([view.body.status, view.body.reservation.status]).toEqual(['CREATED', 'HELD']);
    expect(await skuCounters(s, 'q1')).toMatchObject({ available: 3, held: 2 });
    const timeline = await s.call('GET', `/v1/orders/${first.body.order_id}/timeline`, { token: buyer });
    expect(timeline.body.map((t: { to: string }) => t.to)).toEqual(['PENDING', 'CREATED']);
  });

  it('Q-02 40 buyers race for 10 units through the queue: 10 CREATED, 30 REJECTED SOLD_OUT holding nothing, every request applied once', async () => {
    // Proves no oversell and all-or-nothing on the queued path under real concurrency (two pumps at once).
    await createSku(s, { sku: 'q2', stock: 10 });
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => queue(await s.token(TENANT, `q2-u${i}`), `q2-k${i}`, { sku: 'q2' })),
    );
    expect(everyOf(answers, (a) => a.status === 202 && a.body.status === 'PENDING')).toBe(true);
    await Promise.all([freshPump().drain(), freshPump().drain()]);
    const ids = answers.map((a) => a.body.order_id as string);
    const statuses = await Promise.all(ids.map(status));
    expect(statuses.filter((x) => x === 'CREATED')).toHaveLength(10);
    expect(statuses.filter((x) => x === 'REJECTED')).toHaveLength(30);
    expect(await skuCounters(s, 'q2')).toMatchObject({ total: 10, available: 0, held: 10 });
    expect(
      await countRows(
        s.db,
        'reservations r JOIN orders o ON o.reservation_key = r.request_key',
        "o.status = 'REJECTED' AND o.sku = 'q2'",
      ),
    ).toBe(0);
    expect(
      await countRows(s.db, 'stock_inbox', 'order_id = ANY($1) AND applied_at IS NOT NULL AND deliveries = 1', [ids]),
    ).toBe(40);
    expect(await countRows(s.db, 'stock_results_in', "order_id = ANY($1) AND effect = 'APPLIED'", [ids])).toBe(40);
    const rejected = ids[statuses.indexOf('REJECTED')] as string;
    const timeline = await s.db.pool.query<{ reason: string }>(
      'SELECT reason FROM order_transitions WHERE order_id = $1 AND to_status = $2',
      [rejected, 'REJECTED'],
    );
    expect(timeline.rows[0]?.reason).toBe('stock rejected: SOLD_OUT');
  });

  it('Q-03 a re-sent and a duplicated request change nothing: no second hold, the first result replayed and recorded IGNORED', async () => {
    await createSku(s, { sku: 'q3', stock: 3 });
    const buyer = await s.token(TENANT, 'q3-user');
    const placed = await queue(buyer, 'q3-key', { sku: 'q3' });
    await pump().drain();
    expect(await status(placed.body.order_id)).toBe('CREATED');
    // Redeliver on purpose: the request is handed back to the outbox twice, as recovery and a lost ack would.
    for (let i = 0; i < 2; i++) {
      await s.db.pool.query('UPDATE stock_requests_out SET published_at = NULL WHERE order_id = $1', [
        placed.body.order_id,
      ]);
      await pump().drain();
    }
    expect(await skuCounters(s, 'q3')).toMatchObject({ available: 2, held: 1 });
    const inbox = await s.db.pool.query<{ deliveries: number }>(
      'SELECT deliveries FROM stock_inbox WHERE order_id = $1',
      [placed.body.order_id],
    );
    expect(inbox.rows).toEqual([{ deliveries: 3 }]);
    const effects = await s.db.pool.query<{ effect: string }>(
      'SELECT effect FROM stock_results_in WHERE order_id = $1 ORDER BY received_at, event_id',
      [placed.body.order_id],
    );
    expect(effects.rows.map((r) => r.effect).sort()).toEqual(['APPLIED', 'IGNORED', 'IGNORED']);
    expect(await status(placed.body.order_id)).toBe('CREATED');
  });

  it('Q-04 a per-user limit rejects the order with USER_LIMIT; a multi-line order is held whole or not at all', async () => {
    await createSku(s, { sku: 'q4a', stock: 10, per_user_limit: 1 });
    await createSku(s, { sku: 'q4b', stock: 1 });
    const buyer = await s.token(TENANT, 'q4-user');
    const ok = await queue(buyer, 'q4-1', { lines: [{ sku: 'q4a' }, { sku: 'q4b' }] });
    const limited = await queue(buyer, 'q4-2', { sku: 'q4a' });
    const other = await queue(await s.token(TENANT, 'q4-other'), 'q4-3', { lines: [{ sku: 'q4a' }, { sku: 'q4b' }] });
    await pump().drain();
    expect(await Promise.all([ok, limited, other].map((r) => status(r.body.order_id)))).toEqual([
      'CREATED',
      'REJECTED',
      'REJECTED',
    ]);
    const reasons = await s.db.pool.query<{ reason: string }>(
      "SELECT reason FROM order_transitions WHERE order_id = ANY($1) AND to_status = 'REJECTED' ORDER BY reason",
      [[limited.body.order_id, other.body.order_id]],
    );
    expect(reasons.rows.map((r) => r.reason)).toEqual(['stock rejected: SOLD_OUT', 'stock rejected: USER_LIMIT']);
    // The other buyer's q4a line was undone with the refused q4b line.
    expect(await skuCounters(s, 'q4a')).toMatchObject({ available: 9, held: 1 });
  });

  it('Q-05 wallet too low on a queued order: 202 RELEASING, the unit goes back through the stock service, then CANCELLED; enough balance pays', async () => {
    await createSku(s, { sku: 'q5', stock: 2, price: 500 });
    const admin = await s.token(TENANT, 'ops', 'admin');
    const poor = await s.token(TENANT, 'q5-poor');
    const rich = await s.token(TENANT, 'q5-rich');
    for (const [user, amount] of [
      ['q5-poor', 100],
      ['q5-rich', 1000],
    ] as const) {
      const credit = await s.call('POST', `/v1/admin/wallets/${user}/credits`, {
        token: admin,
        body: { amount, reason: 'test top-up' },
        headers: { 'idempotency-key': `c-${user}` },
      });
      expect(credit.status).toBe(201);
    }
    const a = await queue(poor, 'q5-a', { sku: 'q5' });
    const b = await queue(rich, 'q5-b', { sku: 'q5' });
    await pump().drain();
    const payPoor = await s.call('POST', `/v1/orders/${a.body.order_id}/pay`, {
      token: poor,
      body: { method: 'wallet' },
      headers: { 'idempotency-key': 'q5-pay-a' },
    });
    expect([payPoor.status, payPoor.body.status]).toEqual([202, 'RELEASING']);
    const payRich = await s.call('POST', `/v1/orders/${b.body.order_id}/pay`, {
      token: rich,
      body: { method: 'wallet' },
      headers: { 'idempotency-key': 'q5-pay-b' },
    });
    expect([payRich.status, payRich.body.status]).toEqual([200, 'PAID']);
    expect(await skuCounters(s, 'q5')).toMatchObject({ held: 1, confirmed: 1, available: 0 });
    await pump().drain();
    expect(await status(a.body.order_id)).toBe('CANCELLED');
    expect(await skuCounters(s, 'q5')).toMatchObject({ held: 0, confirmed: 1, available: 1 });
    const timeline = await s.call('GET', `/v1/orders/${a.body.order_id}/timeline`, { token: poor });
    expect(timeline.body.map((t: { to: string }) => t.to)).toEqual(['PENDING', 'CREATED', 'RELEASING', 'CANCELLED']);
    expect((await s.call('GET', '/v1/wallet', { token: poor })).body.balance).toBe(100);
    const again = await s.call('POST', `/v1/orders/${a.body.order_id}/pay`, {
      token: poor,
      body: { method: 'wallet' },
      headers: { 'idempotency-key': 'q5-pay-a' },
    });
    expect([again.status, again.text]).toEqual([202, payPoor.text]);
  });

  it('Q-06 an unknown event type in either outbox is parked and listed for the operator; the rest keeps flowing', async () => {
    await createSku(s, { sku: 'q6', stock: 5 });
    const buyer = await s.token(TENANT, 'q6-user');
    const placed = await queue(buyer, 'q6-key', { sku: 'q6' });
    await s.db.pool.query(
      `INSERT INTO stock_requests_out (request_key, order_id, event_type, payload, created_at) VALUES ($1, $2, 'STOCK_TELEPORT_REQUESTED', '{}', now())`,
      [`${placed.body.order_id}/teleport`, placed.body.order_id],
    );
    await s.db.pool.query(
      `INSERT INTO stock_outbox (request_key, order_id, event_type, payload, created_at) VALUES ('x/y', $1, 'STOCK_VANISHED', '{}', now())`,
      [placed.body.order_id],
    );
    const errors: unknown[] = [];
    await stockPumpForErrors(errors).drain();
    expect(await status(placed.body.order_id)).toBe('CREATED');
    expect(errors).toHaveLength(2);
    expect(
      await countRows(
        s.db,
        'stock_requests_out',
        "event_type = 'STOCK_TELEPORT_REQUESTED' AND dead_at IS NOT NULL AND published_at IS NULL",
      ),
    ).toBe(1);
    const parked = await s.call('GET', '/v1/admin/stock/parked', { token: operator });
    expect(parked.body.parked.map((p: { event_type: string }) => p.event_type).sort()).toEqual([
      'STOCK_TELEPORT_REQUESTED',
      'STOCK_VANISHED',
    ]);
    const buyerView = await s.call('GET', '/v1/admin/stock/parked', { token: await s.token(TENANT, 'ops', 'admin') });
    expect(buyerView.status).toBe(403);
  });

  it('Q-07 a claim whose lease ran out is taken over; the old owner can no longer mark it (fencing by owner)', async () => {
    await createSku(s, { sku: 'q7', stock: 5 });
    const placed = await queue(await s.token(TENANT, 'q7-user'), 'q7-key', { sku: 'q7' });
    const leaseMs = 30_000;
    const dead = await claimStockRequests(s.deps.db, { owner: 'dead-shop', now: s.clock.now(), leaseMs, limit: 500 });
    expect(dead.map((r) => r.order_id)).toContain(placed.body.order_id);
    const other = createStockPump({
      shopDb: s.deps.db,
      stockDb: s.deps.db,
      clock: s.clock,
      owner: 'live-shop',
      leaseMs,
      resendAfterMs: 60_000,
    });
    await other.drain();
    expect(await status(placed.body.order_id)).toBe('PENDING'); // still inside the dead owner's lease
    s.clock.advance(leaseMs + 1);
    await other.drain();
    expect(await status(placed.body.order_id)).toBe('CREATED');
    expect(
      await markStockRequestsSent(
        s.deps.db,
        dead.map((r) => r.key),
        'dead-shop',
        s.clock.now(),
      ),
    ).toBe(0);
    expect(await countRows(s.db, 'stock_inbox', 'order_id = $1 AND deliveries = 1', [placed.body.order_id])).toBe(1);
  });

  it('Q-08 FLASHPAY_ORDER_MODE=async queues every create; a PENDING order cannot be paid or cancelled yet', async () => {
    const asyncStack = await startStack({ db: s.db, config: { orderMode: 'async' } });
    try {
      await createSku(asyncStack, { sku: 'q8', stock: 5 });
      const buyer = await asyncStack.token(TENANT, 'q8-user');
      const placed = await asyncStack.call('POST', '/v1/orders', {
        token: buyer,
        body: { sku: 'q8' },
        headers: { 'idempotency-key': 'q8-key' },
      });
      expect([placed.status, placed.body.status]).toEqual([202, 'PENDING']);
      const pay = await asyncStack.call('POST', `/v1/orders/${placed.body.order_id}/pay`, {
        token: buyer,
        body: { method: 'wallet' },
        headers: { 'idempotency-key': 'q8-pay' },
      });
      const cancel = await asyncStack.call('POST', `/v1/orders/${placed.body.order_id}/cancel`, { token: buyer });
      expect([pay.status, pay.body.code, cancel.status, cancel.body.code]).toEqual([409, 'REJECTED', 409, 'REJECTED']);
      expect(await status(placed.body.order_id)).toBe('PENDING');
    } finally {
      await asyncStack.close();
    }
  });

  function stockPumpForErrors(errors: unknown[]) {
    return freshPump((error) => errors.push(error));
  }

  /** A pump of its own (its own owner): what a second process would run. */
  function freshPump(onError?: (error: unknown) => void) {
    return createStockPump({
      shopDb: s.deps.db,
      stockDb: s.deps.db,
      clock: s.clock,
      leaseMs: s.deps.config.claimLeaseMs,
      resendAfterMs: s.deps.config.stockResendAfterMs,
      ...(onError ? { onError } : {}),
    });
  }
});
