import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, skuCounters, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { createStockPump } from '../../src/orders/queued/pipeline.ts';
import { receiveStockResults, type StockResult } from '../../src/orders/index.ts';
import { everyOf } from '../support/every.ts';

// Issue 16, P7: the queued path applied set-based. The stock service decides a run of deductions
// on SKU rows locked once and writes them in one statement; the shop applies a pass's results in
// one transaction; drain overlaps its steps. Each test checks that the outcome is the one the
// request-by-request path gives: arrival order, all lines or none, limits, each result once.
describe('queued orders, set-based (P7)', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  const pump = (overlap = true) =>
    createStockPump({
      shopDb: s.deps.db,
      stockDb: s.deps.db,
      clock: s.clock,
      leaseMs: 30_000,
      resendAfterMs: 600_000,
      overlap,
    });
  const queue = async (user: string, key: string, body: Record<string, unknown>) => {
    const r = await s.call('POST', '/v1/orders', {
      token: await s.token(TENANT, user),
      body,
      headers: { 'idempotency-key': key, prefer: 'respond-async' },
    });
    expect(r.status).toBe(202);
    s.clock.advance(1); // the shop's outbox is relayed by created_at: one arrival order, no ties
    return r.body.order_id as string;
  };
  const statuses = async (ids: readonly string[]) => {
    const rows = await s.db.pool.query<{ order_id: string; status: string }>(
      'SELECT order_id, status FROM orders WHERE order_id = ANY($1)',
      [ids],
    );
    const by = new Map(rows.rows.map((r) => [r.order_id, r.status]));
    return ids.map((id) => by.get(id));
  };

  it('QB-01 one batch of mixed quantities, multi-line orders and a per-user limit: the outcome of first-fit in arrival order, nothing oversold', async () => {
    // Proves the set-based runs decide as the one-request path does: a request that does not fit is
    // refused and a smaller one after it still gets the last units; a multi-line order is whole or
    // nothing; a limited SKU's requests (the one-request path) sit between the runs in their place.
    await createSku(s, { sku: 'qb1', stock: 44 });
    await createSku(s, { sku: 'qb1b', stock: 3 });
    await createSku(s, { sku: 'qb1l', stock: 100, per_user_limit: 2 });
    const stock = new Map([
      ['qb1', 44],
      ['qb1b', 3],
      ['qb1l', 100],
    ]);
    const held = new Map<string, number>();
    const expected: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const user = `qb1-u${i % 9}`;
      const lines =
        i % 5 === 0
          ? [{ sku: 'qb1l', quantity: 1 }]
          : i % 7 === 0
            ? [
                { sku: 'qb1', quantity: 1 },
                { sku: 'qb1b', quantity: 1 },
              ]
            : [{ sku: 'qb1', quantity: (i % 3) + 1 }];
      ids.push(await queue(user, `qb1-k${i}`, lines.length === 1 ? lines[0]! : { lines }));
      // The reference: one request after the other, every line or none, the limit per user and SKU.
      const limitKey = `${user}/qb1l`;
      const fits = lines.every((l) => (stock.get(l.sku) ?? 0) >= l.quantity);
      const within = lines.every((l) => l.sku !== 'qb1l' || (held.get(limitKey) ?? 0) + l.quantity <= 2);
      if (fits && within) {
        for (const l of lines) stock.set(l.sku, (stock.get(l.sku) ?? 0) - l.quantity);
        for (const l of lines) if (l.sku === 'qb1l') held.set(limitKey, (held.get(limitKey) ?? 0) + l.quantity);
        expected.push('CREATED');
      } else expected.push('REJECTED');
    }
    // The case that tells first-fit from a prefix cut: a request refused, a smaller one after it served.
    const refused = expected.indexOf('REJECTED', 1);
    expect(expected.slice(refused).filter((x, i) => x === 'CREATED' && (refused + i) % 5 !== 0).length).toBeGreaterThan(
      0,
    );
    const drained = await pump().drain();
    expect(drained.applied).toBe(60);
    expect(await statuses(ids)).toEqual(expected);
    expect(await skuCounters(s, 'qb1')).toMatchObject({
      total: 44,
      available: stock.get('qb1'),
      held: 44 - stock.get('qb1')!,
    });
    expect(await skuCounters(s, 'qb1b')).toMatchObject({ available: stock.get('qb1b') });
    expect(await skuCounters(s, 'qb1l')).toMatchObject({ available: stock.get('qb1l') });
    // Every granted line is a HELD reservation of its order; a refused order holds nothing.
    const rejected = ids.filter((_, i) => expected[i] === 'REJECTED');
    expect(
      await countRows(
        s.db,
        'order_lines l JOIN reservations r ON r.request_key = l.reservation_key',
        'l.order_id = ANY($1)',
        [rejected],
      ),
    ).toBe(0);
    expect(await countRows(s.db, 'reservations', "sku IN ('qb1', 'qb1b', 'qb1l') AND status = 'HELD'")).toBe(
      ids.filter((_, i) => expected[i] === 'CREATED').length +
        ids.filter((_, i) => expected[i] === 'CREATED' && i % 7 === 0 && i % 5 !== 0).length,
    );
  });

  it('QB-02 results in one transaction: a copy is a DUPLICATE, a result for an order that moved is IGNORED, an unknown order is recorded, the rest APPLIED', async () => {
    await createSku(s, { sku: 'qb2', stock: 1 });
    const first = await queue('qb2-a', 'qb2-1', { sku: 'qb2' });
    const second = await queue('qb2-b', 'qb2-2', { sku: 'qb2' });
    // Requests relayed and applied, results left in the stock service's outbox.
    await createStockPump({
      shopDb: s.deps.db,
      stockDb: s.deps.db,
      clock: s.clock,
      leaseMs: 30_000,
      resendAfterMs: 600_000,
      roles: { shop: true, stock: true, results: false },
    }).runOnce();
    const out = await s.db.pool.query<{
      event_id: string;
      order_id: string;
      event_type: string;
      payload: Record<string, unknown>;
    }>(
      'SELECT event_id::text, order_id, event_type, payload FROM stock_outbox WHERE order_id = ANY($1) ORDER BY event_id',
      [[first, second]],
    );
    const results: StockResult[] = out.rows.map((r) => ({ ...r, event_id: `stock-${r.event_id}` }));
    expect(results.map((r) => r.event_type)).toEqual(['STOCK_RESERVED', 'STOCK_REJECTED']);
    const effects = await receiveStockResults(
      s.deps.db,
      [
        ...results,
        results[0]!,
        { event_id: 'qb2-late', order_id: first, event_type: 'STOCK_REJECTED', payload: { reason: 'SOLD_OUT' } },
        { event_id: 'qb2-nobody', order_id: 'no-such-order', event_type: 'STOCK_RESERVED', payload: {} },
      ],
      s.clock.now(),
    );
    expect(effects).toEqual(['APPLIED', 'APPLIED', 'DUPLICATE', 'IGNORED', 'UNKNOWN_ORDER']);
    expect(await statuses([first, second])).toEqual(['CREATED', 'REJECTED']);
    const inbox = await s.db.pool.query<{ event_id: string; effect: string }>(
      "SELECT event_id, effect FROM stock_results_in WHERE order_id = ANY($1) OR event_id = 'qb2-nobody' ORDER BY event_id",
      [[first, second]],
    );
    expect(inbox.rows.map((r) => r.effect).sort()).toEqual(['APPLIED', 'APPLIED', 'IGNORED', 'UNKNOWN_ORDER']);
    expect(await countRows(s.db, 'order_transitions', 'order_id = $1', [first])).toBe(2); // PENDING, CREATED: once
    expect(await skuCounters(s, 'qb2')).toMatchObject({ available: 0, held: 1 });
  });

  it('QB-03 two overlapped drains and a sequential one at once on 300 buyers for 120 units: 120 CREATED, granted before any refusal, every request and result applied once', async () => {
    await createSku(s, { sku: 'qb3', stock: 120 });
    const ids: string[] = [];
    for (let i = 0; i < 300; i += 30)
      ids.push(
        ...(await Promise.all(
          Array.from({ length: 30 }, (_, j) => queue(`qb3-u${i + j}`, `qb3-k${i + j}`, { sku: 'qb3' })),
        )),
      );
    await Promise.all([pump().drain(), pump().drain(), pump(false).drain()]);
    const st = await statuses(ids);
    expect(st.filter((x) => x === 'CREATED')).toHaveLength(120);
    expect(st.filter((x) => x === 'REJECTED')).toHaveLength(180);
    // In the order the stock service applied them (its answers' event ids): 120 grants, then only
    // refusals. (seq is drawn when a delivery inserts, not when it commits: with several pumps
    // delivering at once a lower seq can become visible after a higher one, so seq is not the check.)
    const answers = await s.db.pool.query<{ event_type: string }>(
      'SELECT event_type FROM stock_outbox WHERE order_id = ANY($1) ORDER BY event_id',
      [ids],
    );
    const kinds = answers.rows.map((r) => r.event_type);
    expect(everyOf(kinds.slice(0, 120), (x) => x === 'STOCK_RESERVED')).toBe(true);
    expect(everyOf(kinds.slice(120), (x) => x === 'STOCK_REJECTED')).toBe(true);
    expect(
      await countRows(s.db, 'stock_inbox', 'order_id = ANY($1) AND applied_at IS NOT NULL AND deliveries = 1', [ids]),
    ).toBe(300);
    expect(await countRows(s.db, 'stock_results_in', "order_id = ANY($1) AND effect = 'APPLIED'", [ids])).toBe(300);
    expect(await countRows(s.db, 'stock_outbox', 'order_id = ANY($1)', [ids])).toBe(300);
    expect(await skuCounters(s, 'qb3')).toMatchObject({ total: 120, available: 0, held: 120 });
  });
});
