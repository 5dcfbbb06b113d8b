import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelay, type Relay } from '../../src/outbox/relay.ts';
import { createHttpSink } from '../../src/outbox/sinks/http.sink.ts';
import type { TestDatabase } from '../support/db.ts';
import {
  effectCounts,
  insertEvent,
  outboxRows,
  recordingSink,
  seedOrder,
  seedOrdersWithEvents,
  shipCounts,
  TEST_SECRET,
  type WebhookConsumer,
  openConsumer,
} from '../support/outbox-fixtures.ts';
import { everyOf } from '../support/every.ts';

const RELAY = { leaseMs: 5_000, batchSize: 5, maxAttempts: 5, backoffBaseMs: 10, onError: () => undefined };

describe('relays sharing one outbox', () => {
  let db: TestDatabase;
  let consumer: WebhookConsumer;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, consumer, close } = await openConsumer());
  });
  afterAll(async () => close());

  // C29-09: two relays claiming with SKIP LOCKED split 40 events between them; the consumer gets
  // each at least once and applies each exactly once; a replay is DUPLICATE, an older version STALE.
  it('C29-09 two relays drain 40 events concurrently, each applied exactly once', async () => {
    const paid = await seedOrdersWithEvents(db.pool, 'c09', 30, 'PAID');
    const failed = await seedOrdersWithEvents(db.pool, 'c09f', 5, 'FAILED');
    const cancelled = await seedOrdersWithEvents(db.pool, 'c09c', 5, 'CANCELLED');
    const sink = createHttpSink({ url: consumer.url, secret: TEST_SECRET, timeoutMs: 2_000 });
    const relays = [
      createRelay({ db: db.pool, sink, owner: 'relay-A', ...RELAY }),
      createRelay({ db: db.pool, sink, owner: 'relay-B', ...RELAY }),
    ];

    const results = await Promise.all(relays.map((relay) => relay.drain()));
    expect(results[0]!.delivered + results[1]!.delivered).toBe(40);
    expect(everyOf(results, (r) => r.failed === 0)).toBe(true);

    const rows = [
      ...(await outboxRows(db.pool, 'c09')),
      ...(await outboxRows(db.pool, 'c09f')),
      ...(await outboxRows(db.pool, 'c09c')),
    ];
    expect(rows).toHaveLength(40);
    expect(everyOf(rows, (r) => r.published_at !== null)).toBe(true);
    const byRelay = (owner: string) => rows.filter((r) => r.claimed_by === owner).length;
    expect(byRelay('relay-A') + byRelay('relay-B')).toBe(40);
    expect(byRelay('relay-A')).toBeGreaterThan(0); // both took a share of the work
    expect(byRelay('relay-B')).toBeGreaterThan(0);

    const applied = await db.pool.query<{ event_id: string; n: number }>(
      `SELECT event_id, count(*) FILTER (WHERE effect = 'APPLIED') AS n FROM ful_received GROUP BY event_id`,
    );
    const allIds = [...paid, ...failed, ...cancelled].map((s) => s.eventId).sort();
    expect(applied.rows.map((r) => r.event_id).sort()).toEqual(allIds); // each received at least once
    expect(everyOf(applied.rows, (r) => r.n === 1)).toBe(true); // and applied exactly once
    const ships = await shipCounts(db.pool, 'c09');
    expect(Object.values(ships).filter((n) => n === 1)).toHaveLength(30); // each PAID order shipped once
    expect(Object.values(await shipCounts(db.pool, 'c09f'))).toEqual([0, 0, 0, 0, 0]);

    // Re-deliver an already delivered event, then an older version of a paid order.
    const first = paid[0]!;
    await sink.deliver({
      event_id: first.eventId,
      order_id: first.orderId,
      event_type: 'ORDER_PAID',
      order_version: 4,
      payload: {},
    });
    await sink.deliver({
      event_id: '99999',
      order_id: first.orderId,
      event_type: 'ORDER_CANCELLED',
      order_version: 2,
      payload: {},
    });
    expect(await effectCounts(db.pool, 'c09')).toEqual({ APPLIED: 30, DUPLICATE: 1, STALE: 1 });
    expect(await shipCounts(db.pool, 'c09')).toEqual(ships);
  });

  // An order's events reach the sink in version order: the claim never hands out an event while an
  // earlier version of the same order is unpublished, even with three relays and a jittery sink.
  it('hands two events of one order to the sink in version order, even with several relays', async () => {
    const orders = Array.from({ length: 12 }, (_, i) => `ord-${String(i).padStart(2, '0')}`);
    for (const orderId of orders) await seedOrder(db.pool, { orderId, status: 'REFUNDED', version: 9 });
    for (const orderId of orders) await insertEvent(db.pool, orderId, 'ORDER_PAID', 4);
    for (const orderId of orders) await insertEvent(db.pool, orderId, 'ORDER_REFUNDED', 9);
    const sink = recordingSink(8);
    const relays: Relay[] = ['R1', 'R2', 'R3'].map((owner) =>
      createRelay({ db: db.pool, sink, owner, ...RELAY, batchSize: 4 }),
    );

    // A drain ends when nothing is claimable *now*; later versions become claimable as earlier ones publish.
    for (let round = 0; round < 20 && sink.calls.length < 24; round++)
      await Promise.all(relays.map((relay) => relay.drain()));

    expect(sink.calls).toHaveLength(24);
    for (const orderId of orders) {
      const calls = sink.calls.filter((call) => call.event.order_id === orderId);
      expect(calls.map((call) => call.event.order_version)).toEqual([4, 9]);
      expect(calls[1]!.startedAt).toBeGreaterThan(calls[0]!.ackedAt); // v9 handed over only after v4 was acknowledged
    }
  });
});
