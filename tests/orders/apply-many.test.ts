import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyOrderEvents } from '../../src/orders/index.ts';
import type { OrderEvent } from '../../src/orders/decide/decider.ts';
import { inTx } from '../../src/platform/db.ts';
import { buyBatched, inFlight } from '../support/create-batch.ts';
import { createSku, skuCounters, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';

// Issue 16, task G: applyOrderEvents matches each order to its reservations through Maps (it
// scanned the group's reservations per order, n² in the group size). A large group over two
// tenants, replayed, with unknown orders mixed in: every event gets the answer its kind and the
// order's state call for, and the rows (statuses, reservations, log, outbox, counters) agree.
const OTHER = 'tenant-b';
const KINDS = ['charged', 'cancel', 'mismatch', 'pay', 'live-expiry'] as const;
type Kind = (typeof KINDS)[number];

describe('applyOrderEvents, a large group (task G)', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  it('AM-01 2,000+ events over 1,000 orders of two tenants, replayed, unknown ids mixed in: per-event outcomes and rows', async () => {
    for (const tenant of [TENANT, OTHER]) await createSku(s, { sku: 'am', stock: 600 }, tenant);
    const answers = await inFlight(
      Array.from(
        { length: 1_000 },
        (_, i) => () => buyBatched(s, i % 2 === 0 ? TENANT : OTHER, `am-u${i}`, `am-${i}`, 'am'),
      ),
      256,
    );
    expect(answers.map((a) => a.status)).toEqual(Array(1_000).fill(201));
    const ids = answers.map((a) => (JSON.parse(a.body) as { order_id: string }).order_id);
    const amounts = new Map(
      (
        await s.db.pool.query<{ order_id: string; amount: string }>(
          'SELECT order_id, amount FROM orders WHERE order_id = ANY($1)',
          [ids],
        )
      ).rows.map((r) => [r.order_id, Number(r.amount)]),
    );
    const kindOf = new Map<string, Kind>(ids.map((id, i) => [id, KINDS[Math.floor(i / 2) % KINDS.length]!]));
    const eventOf = (id: string): OrderEvent => {
      const amount = amounts.get(id)!;
      switch (kindOf.get(id)) {
        case 'charged':
          return { type: 'PROVIDER_ANSWERED', via: 'callback', status: 'CHARGED', amount, cause: 'callback' };
        case 'cancel':
          return { type: 'CANCEL_REQUESTED' };
        case 'mismatch':
          return {
            type: 'PROVIDER_ANSWERED',
            via: 'callback',
            status: 'CHARGED',
            amount: amount + 1,
            cause: 'callback',
          };
        case 'pay':
          return { type: 'PAY_REQUESTED' };
        default:
          return { type: 'HOLD_EXPIRED' };
      }
    };
    const unknown = (round: number) => Array.from({ length: 100 }, (_, i) => `am-missing-${round}-${i}`);
    // Unknown ids interleaved; the replay in the reverse order.
    const first = ids.flatMap((id, i) => (i % 10 === 0 ? [id, unknown(1)[i / 10]!] : [id]));
    const second = [...ids].reverse().flatMap((id, i) => (i % 10 === 0 ? [unknown(2)[i / 10]!, id] : [id]));
    const apply = (group: readonly string[]) =>
      inTx(s.deps.db, (tx) =>
        applyOrderEvents(
          tx,
          group.map((orderId) => ({ orderId, event: eventOf(orderId) })),
          s.clock.now(),
        ),
      );
    const firstAnswers = await apply(first);
    const secondAnswers = await apply(second);
    expect(first.length + second.length).toBe(2_200);

    const expected: Record<Kind, [string, string]> = {
      charged: ['PAID', 'DUPLICATE'],
      cancel: ['CANCELLED', 'REJECTED'],
      mismatch: ['AMOUNT_MISMATCH', 'AMOUNT_MISMATCH'],
      pay: ['PAYING', 'REJECTED'],
      'live-expiry': ['REJECTED', 'REJECTED'],
    };
    const outcome = (id: string, round: 0 | 1) => {
      const kind = kindOf.get(id);
      return kind ? expected[kind][round] : 'UNKNOWN_ORDER';
    };
    expect(firstAnswers.map((a) => a.outcome)).toEqual(first.map((id) => outcome(id, 0)));
    expect(secondAnswers.map((a) => a.outcome)).toEqual(second.map((id) => outcome(id, 1)));
    // Each answer carries its own order (no answer matched to another order).
    for (const [i, a] of firstAnswers.entries()) if (a.order) expect(a.order.orderId).toBe(first[i]);
    expect(firstAnswers.filter((a) => a.calls.includes('CHARGE'))).toHaveLength(200);

    const rows = await s.db.pool.query<{
      order_id: string;
      status: string;
      reservation: string;
      attention: string | null;
      log: number;
      events: number;
    }>(
      `SELECT o.order_id, o.status, r.status AS reservation, o.attention,
              (SELECT count(*)::int FROM order_transitions t WHERE t.order_id = o.order_id) AS log,
              (SELECT count(*)::int FROM outbox x WHERE x.order_id = o.order_id) AS events
       FROM orders o JOIN reservations r ON r.tenant_id = o.tenant_id AND r.request_key = o.reservation_key
       WHERE o.order_id = ANY($1)`,
      [ids],
    );
    expect(rows.rows).toHaveLength(1_000);
    const state: Record<Kind, [string, string, number, number]> = {
      charged: ['PAID', 'CONFIRMED', 2, 1],
      cancel: ['CANCELLED', 'RELEASED', 2, 1],
      mismatch: ['CREATED', 'HELD', 1, 0],
      pay: ['PAYING', 'HELD', 2, 0],
      'live-expiry': ['CREATED', 'HELD', 1, 0],
    };
    for (const r of rows.rows) {
      const kind = kindOf.get(r.order_id)!;
      expect([r.order_id, r.status, r.reservation, r.log, r.events]).toEqual([r.order_id, ...state[kind]]);
      const amount = amounts.get(r.order_id)!;
      expect(r.attention).toBe(kind === 'mismatch' ? `charged ${amount + 1} for an order of ${amount}` : null);
    }
    expect(await countRows(s.db, 'orders', 'order_id LIKE $1', ['am-missing-%'])).toBe(0);
    // 500 orders per tenant, 100 of each kind: 100 confirmed, 100 released, 300 still held.
    for (const tenant of [TENANT, OTHER])
      expect(await skuCounters(s, 'am', tenant)).toMatchObject({
        total: 600,
        available: 200,
        held: 300,
        confirmed: 100,
        released: 100,
      });
  });
});
