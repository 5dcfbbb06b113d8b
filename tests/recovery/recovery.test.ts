import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRecoveryPass } from '../../src/recovery/recovery.service.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { closeAnswer, queryAnswer } from '../../src/payments/index.ts';
import { applyOrderEvents } from '../../src/orders/index.ts';
import { businessMetrics } from '../../src/platform/business-metrics.ts';
import { inTx } from '../../src/platform/db.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

describe('the recovery job', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  const queries = async () =>
    ((await s.control('GET', '/_control/requests')) as { query: { by_order: Record<string, number> } }).query.by_order;

  it('several recovery processes at once divide the work: each UNKNOWN order is queried once and ends PAID', async () => {
    // Proves SKIP LOCKED claims: concurrent passes neither collide nor repeat each other's provider calls.
    await createSku(s, { sku: 'r1', stock: 10 });
    const orders = await Promise.all(Array.from({ length: 10 }, (_, i) => s.buy(`r1-${i}`, 'r1')));
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', ms: 400, times: 10 });
    await Promise.all(orders.map((o) => s.pay(o.token, o.orderId)));
    const deps = paymentDeps(s.deps);
    const reports = await Promise.all([1, 2, 3].map(() => runRecoveryPass(deps, { staleAfterMs: 0 })));
    expect(reports.reduce((sum, r) => sum + r.examined, 0)).toBe(10);
    const byOrder = await queries();
    expect(orders.map((o) => byOrder[o.orderId])).toEqual(Array(10).fill(1));
    for (const o of orders) expect((await s.order(o.orderId)).status).toBe('PAID');
    expect(await skuCounters(s, 'r1')).toMatchObject({ confirmed: 10, held: 0 });
  });

  it('an order the provider cannot answer for is retried with backoff, then reported for a human with the reason', async () => {
    // Proves an order that cannot converge is neither forgotten nor hammered, and never guessed.
    await createSku(s, { sku: 'r2', stock: 2 });
    const o = await s.buy('r2-user', 'r2');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 400,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    await s.control('POST', '/_control/faults', {
      op: 'query',
      kind: 'ERROR_500',
      merchant_order: o.orderId,
      times: 10,
    });
    const deps = paymentDeps(s.deps);
    let report = await runRecoveryPass(deps, { staleAfterMs: 0 });
    expect(report.still_pending).toEqual([{ order_id: o.orderId, status: 'UNKNOWN', reason: 'query http 500' }]);
    for (let i = 0; i < 2; i++) await runRecoveryPass(deps, { staleAfterMs: 0 });
    // Three misses: the next attempt waits; an immediate pass leaves it alone.
    expect((await runRecoveryPass(deps, { staleAfterMs: 0 })).examined).toBe(0);
    for (let attempt = 3; attempt < 10; attempt++) {
      s.clock.advance(10 * 60_000);
      report = await runRecoveryPass(deps, { staleAfterMs: 0 });
    }
    expect(report.needs_attention).toContainEqual({
      order_id: o.orderId,
      status: 'UNKNOWN',
      attention: 'cannot converge after 10 attempts: query http 500',
    });
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['UNKNOWN', 'HELD']);
    // When the provider answers again, the order converges and the note for a human is withdrawn.
    s.clock.advance(10 * 60_000);
    report = await runRecoveryPass(deps, { staleAfterMs: 0 });
    expect(report.resolved).toMatchObject({ PAID: 1 });
    expect(report.needs_attention.map((a) => a.order_id)).not.toContain(o.orderId);
    expect((await s.order(o.orderId)).attention).toBeNull();
  });

  it('answers are applied in one group; a group that fails falls back to one transaction per order, so one poisoned order holds back no other', async () => {
    // Proves recovery's group commit keeps each order's outcome its own: a transition the database refuses fails its order alone.
    await createSku(s, { sku: 'r4', stock: 6 });
    const orders = await Promise.all(Array.from({ length: 6 }, (_, i) => s.buy(`r4-${i}`, 'r4')));
    const [poisoned, ...rest] = orders.map((o) => o.orderId);
    const charged = new Set(orders.slice(0, 4).map((o) => o.orderId));
    for (const o of orders) {
      // Four charges go through but answer after the pay timeout; two never reach the ledger.
      const fault = charged.has(o.orderId) ? { kind: 'DELAY_RESPONSE', ms: 400 } : { kind: 'RESET_CONNECTION' };
      await s.control('POST', '/_control/faults', { op: 'charge', merchant_order: o.orderId, ...fault });
    }
    const paid = await Promise.all(orders.map((o) => s.pay(o.token, o.orderId)));
    expect(paid.map((p) => p.body.status)).toEqual(Array(6).fill('UNKNOWN'));
    await s.deps.db.query(
      `CREATE FUNCTION r4_poison() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.order_id = '${poisoned}' AND NEW.status <> OLD.status THEN RAISE EXCEPTION 'r4 poisoned'; END IF; RETURN NEW; END $$;
       CREATE TRIGGER r4_poison BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION r4_poison()`,
    );
    const deps = paymentDeps(s.deps);
    let report;
    try {
      report = await runRecoveryPass(deps, { staleAfterMs: 0 });
    } finally {
      await s.deps.db.query('DROP TRIGGER r4_poison ON orders; DROP FUNCTION r4_poison()');
    }
    expect(report.still_pending).toEqual([
      { order_id: poisoned, status: 'UNKNOWN', reason: expect.stringContaining('r4 poisoned') },
    ]);
    for (const id of rest) expect((await s.order(id)).status).toBe(charged.has(id) ? 'PAID' : 'FAILED');
    // The next pass converges the order the trigger held back; every order has exactly one event.
    await runRecoveryPass(deps, { staleAfterMs: 0 });
    expect((await s.order(poisoned ?? '')).status).toBe('PAID');
    const events = await s.deps.db.query<{ order_id: string; n: number }>(
      'SELECT order_id, count(*)::int AS n FROM outbox WHERE order_id = ANY($1) GROUP BY order_id',
      [orders.map((o) => o.orderId)],
    );
    expect(events.rows.map((r) => r.n)).toEqual(Array(6).fill(1));
    expect(await skuCounters(s, 'r4')).toMatchObject({ confirmed: 4, held: 0, available: 2 });
  });

  it('a CREATED order whose hold expired is cancelled, its unit released in the same transaction', async () => {
    // Proves recovery step 4: abandoned orders do not keep stock off sale.
    await createSku(s, { sku: 'r3', stock: 3, hold_ttl_ms: 1000 });
    const abandoned = await s.buy('r3-a', 'r3');
    s.clock.advance(1500);
    const fresh = await s.buy('r3-b', 'r3');
    const report = await s.recover(0);
    expect(report.body.resolved).toMatchObject({ CANCELLED: 1 });
    const view = await s.order(abandoned.orderId);
    expect([view.status, view.reservation.status, view.timeline.at(-1)?.reason]).toEqual([
      'CANCELLED',
      'RELEASED',
      'reservation expired',
    ]);
    expect((await s.order(fresh.orderId)).status).toBe('CREATED');
    expect(await skuCounters(s, 'r3')).toMatchObject({ available: 2, held: 1 });
    expect(report.body.reconciliation).toBeDefined();
    expect(report.body.outbox).toMatchObject({ failed: 0 });
  });

  it('RG-01 one group confirms and releases on three SKUs (each SKU row written once) while buyers create on them: counters conserved, each order decided once, no deadlock', async () => {
    // Proves the set-based stock moves of a recovery group (confirmMany / releaseMany): units summed
    // per SKU, holdings per buyer, SKU rows in order, racing a second group with the same answers
    // and the creates' batches on the same SKUs.
    const skus = ['rg-a', 'rg-b', 'rg-c'];
    for (const sku of skus) await createSku(s, { sku, stock: 40, per_user_limit: 2 });
    const orders = await Promise.all(
      Array.from({ length: 18 }, (_, i) => s.buy(`rg-u${i % 9}`, skus[i % 3] ?? 'rg-a', `rg-${i}`)),
    );
    // Per SKU (i % 3) six orders: four charged, two never reaching the provider; each buyer holds two units, its limit.
    const charged = new Set(orders.filter((_, i) => Math.floor(i / 3) % 3 !== 2).map((o) => o.orderId));
    for (const o of orders) {
      const fault = charged.has(o.orderId) ? { kind: 'DELAY_RESPONSE', ms: 400 } : { kind: 'RESET_CONNECTION' };
      await s.control('POST', '/_control/faults', { op: 'charge', merchant_order: o.orderId, ...fault });
    }
    const paid = await Promise.all(orders.map((o) => s.pay(o.token, o.orderId)));
    expect(paid.map((p) => p.body.status)).toEqual(Array(18).fill('UNKNOWN'));
    // The provider's real answers: a query for the charged, a close for the rest. Asked with a long
    // timeout: the group needs definite answers, and a busy test machine can pass the pay's 300 ms.
    const deps = paymentDeps({ ...s.deps, config: { ...s.deps.config, payTimeoutMs: 5_000 } });
    const group = await Promise.all(
      orders.map(async (o) => ({
        orderId: o.orderId,
        event: charged.has(o.orderId)
          ? queryAnswer(await deps.channel.query(o.orderId))
          : closeAnswer(await deps.channel.close(o.orderId)),
      })),
    );
    group.sort((a, b) => (a.orderId < b.orderId ? -1 : 1));
    const deadlocks = async () =>
      (await businessMetrics.txRetries.get()).values.find((v) => v.labels.code === '40P01')?.value ?? 0;
    const deadlocksBefore = await deadlocks();
    const applyGroup = () => inTx(s.deps.db, (tx) => applyOrderEvents(tx, group, s.clock.now()));
    const [first, second, creates] = await Promise.all([
      applyGroup(),
      applyGroup(),
      Promise.all(Array.from({ length: 30 }, (_, i) => s.buy(`rg-late${i}`, skus[i % 3] ?? 'rg-a'))),
    ]);
    expect(creates).toHaveLength(30);
    expect((await deadlocks()) - deadlocksBefore).toBe(0);
    // One of the two groups decided each order; the other found it decided and moved nothing.
    const outcomes = [...first, ...second].map((a) => a.outcome);
    expect(outcomes.filter((o) => o === 'PAID')).toHaveLength(12);
    expect(outcomes.filter((o) => o === 'FAILED')).toHaveLength(6);
    for (const o of orders) {
      const view = await s.order(o.orderId);
      expect([view.status, view.reservation.status]).toEqual(
        charged.has(o.orderId) ? ['PAID', 'CONFIRMED'] : ['FAILED', 'RELEASED'],
      );
    }
    const events = await s.deps.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM outbox WHERE order_id = ANY($1) GROUP BY order_id',
      [orders.map((o) => o.orderId)],
    );
    expect(events.rows.map((r) => r.n)).toEqual(Array(18).fill(1));
    for (const sku of skus) {
      const c = await skuCounters(s, sku);
      // 6 group orders per SKU (4 PAID, 2 FAILED) and 10 late creates (HELD).
      expect(c).toMatchObject({ total: 40, available: 40 - 14, held: 10, confirmed: 4, released: 2 });
    }
    const holdings = await s.deps.db.query<{ user_id: string; quantity: number; expected: number }>(
      `SELECT h.user_id, h.quantity, (SELECT count(*)::int FROM reservations r WHERE r.tenant_id = h.tenant_id AND r.sku = h.sku
         AND r.user_id = h.user_id AND r.status IN ('HELD', 'CONFIRMED')) AS expected
       FROM user_holdings h WHERE h.sku = ANY($1)`,
      [skus],
    );
    expect(holdings.rows.length).toBeGreaterThan(0);
    for (const row of holdings.rows) expect([row.user_id, row.quantity]).toEqual([row.user_id, row.expected]);
  });
});
