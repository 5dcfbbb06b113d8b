import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import { backoffDelayMs } from '../../src/platform/backoff.ts';
import { checkEventIntegrity } from '../../src/reconcile/reconcile.events.ts';
import { outboxAdmin } from '../../src/outbox/outbox.admin.ts';
import { createRelay, type RelayOptions } from '../../src/outbox/relay.ts';
import { createHttpSink } from '../../src/outbox/sinks/http.sink.ts';
import type { TestDatabase } from '../support/db.ts';
import {
  effectCounts,
  insertEvent,
  outboxRows,
  seedOrder,
  seedOrdersWithEvents,
  shipCounts,
  TEST_SECRET,
  waitFor,
  type WebhookConsumer,
  openConsumer,
} from '../support/outbox-fixtures.ts';
import { everyOf } from '../support/every.ts';

const BASE_MS = 100;

describe('failed deliveries', () => {
  let db: TestDatabase;
  let consumer: WebhookConsumer;
  let close: () => Promise<void>;
  let relayOptions: Omit<RelayOptions, 'clock' | 'owner'>;
  beforeAll(async () => {
    ({ db, consumer, close } = await openConsumer());
    const sink = createHttpSink({ url: consumer.url, secret: TEST_SECRET, timeoutMs: 1_000 });
    relayOptions = {
      db: db.pool,
      sink,
      leaseMs: 5_000,
      batchSize: 10,
      maxAttempts: 3,
      backoffBaseMs: BASE_MS,
      onError: () => undefined,
    };
  });
  afterAll(async () => close());

  it('backoff is exponential with bounded jitter and a cap', () => {
    for (const random of [0, 0.5, 0.999]) {
      for (let attempt = 1; attempt <= 12; attempt++) {
        const ceiling = Math.min(5_000, 100 * 2 ** (attempt - 1));
        const delay = backoffDelayMs(attempt, 100, 5_000, () => random);
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
  });

  // A consumer that is down only delays events: each failure counts an attempt, backs off
  // exponentially, releases the claim; once the consumer is back, everything arrives exactly once.
  it('retries with exponential backoff while the consumer is down, and all events arrive when it is back', async () => {
    await seedOrdersWithEvents(db.pool, 'down', 1, 'PAID');
    const clock = new ManualClock();
    const relay = createRelay({ ...relayOptions, clock, maxAttempts: 10 });
    consumer.script.refuseNext = 3;
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect(await relay.runOnce()).toEqual({ delivered: 0, failed: 1 });
      const [row] = await outboxRows(db.pool, 'down');
      const waitMs = (
        await db.pool.query<{ ms: number }>(
          `SELECT extract(epoch FROM next_attempt_at - $1::timestamptz) * 1000 AS ms FROM outbox WHERE event_id = $2`,
          [clock.now(), row!.event_id],
        )
      ).rows[0]!.ms;
      const ceiling = BASE_MS * 2 ** (attempt - 1);
      expect(waitMs).toBeGreaterThanOrEqual(ceiling / 2 - 1);
      expect(waitMs).toBeLessThanOrEqual(ceiling + 1);
      expect(row).toMatchObject({ attempts: attempt, claimed_by: null, published_at: null, dead_at: null });
      expect(row!.last_error).toMatch(/HTTP 503/);
      expect(await relay.runOnce()).toEqual({ delivered: 0, failed: 0 }); // not due yet
      clock.advance(ceiling + 1);
    }
    expect(await relay.runOnce()).toEqual({ delivered: 1, failed: 0 });
    expect(await effectCounts(db.pool, 'down')).toEqual({ APPLIED: 1 });
  });

  // Same with the real clock and the relay's own loop: a burst of refusals spread over 8 events.
  it('the running relay loop delivers every event once the sink comes back', async () => {
    await seedOrdersWithEvents(db.pool, 'loop', 8, 'PAID');
    consumer.script.refuseNext = 12;
    const relay = createRelay({ ...relayOptions, backoffBaseMs: 5, maxAttempts: 20 });
    relay.start(5);
    try {
      await waitFor(
        async () => everyOf(await outboxRows(db.pool, 'loop'), (r) => r.published_at !== null),
        'every event published',
      );
    } finally {
      await relay.stop();
    }
    const rows = await outboxRows(db.pool, 'loop');
    expect(rows.reduce((sum, r) => sum + r.attempts, 0)).toBe(12); // each refusal was one counted attempt
    expect(await effectCounts(db.pool, 'loop')).toEqual({ APPLIED: 8 });
    expect(Object.values(await shipCounts(db.pool, 'loop'))).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
  });

  // A poison event is parked after maxAttempts — kept, listed, never dropped — while other events
  // flow. Later versions of the poisoned order wait behind it (per-order order), and re-driving it
  // after the fault is fixed delivers both, in order.
  it('parks a poison event as dead after maxAttempts, lets the others flow, and re-drives it', async () => {
    const others = await seedOrdersWithEvents(db.pool, 'pois', 4, 'PAID');
    await seedOrder(db.pool, { orderId: 'pois-bad', status: 'REFUNDED', version: 7 });
    const poison = await insertEvent(db.pool, 'pois-bad', 'ORDER_PAID', 4);
    const behind = await insertEvent(db.pool, 'pois-bad', 'ORDER_REFUNDED', 7);
    consumer.script.reject.add(poison);
    const clock = new ManualClock();
    const relay = createRelay({ ...relayOptions, clock, maxAttempts: 3 });

    for (let round = 0; round < 5; round++) {
      await relay.drain();
      clock.advance(10_000);
    }
    const rows = await outboxRows(db.pool, 'pois');
    const byId = new Map(rows.map((r) => [r.event_id, r]));
    expect(byId.get(poison)).toMatchObject({ attempts: 3, published_at: null });
    expect(byId.get(poison)!.dead_at).not.toBeNull();
    expect(byId.get(poison)!.last_error).toMatch(/HTTP 500/);
    expect(byId.get(behind)).toMatchObject({ attempts: 0, published_at: null, dead_at: null }); // waits behind the dead one
    expect(everyOf(others, (o) => byId.get(o.eventId)!.published_at !== null)).toBe(true);
    expect((await outboxAdmin.listDeadEvents(db.pool)).map((d) => d.event_id)).toContain(poison);
    expect(await checkEventIntegrity(db.pool)).toMatchObject({ dead: 1, pending: 1 });

    consumer.script.reject.delete(poison);
    expect(await outboxAdmin.redriveDead(db.pool, [poison], clock)).toEqual({ redriven: 1 });
    expect(await outboxAdmin.drainOutbox(relay)).toEqual({ delivered: 2, failed: 0 });
    expect(await checkEventIntegrity(db.pool)).toMatchObject({ dead: 0, pending: 0 });
    const arrivals = await db.pool.query(
      `SELECT event_id, effect FROM ful_received WHERE order_id = 'pois-bad' ORDER BY id`,
    );
    expect(arrivals.rows).toEqual([
      { event_id: poison, effect: 'APPLIED' },
      { event_id: behind, effect: 'APPLIED' },
    ]);
  });

  // An event type the relay does not know is a writer bug: it is parked at once with a clear
  // error, never sent, never skipped.
  it('parks an unknown event type as dead without delivering it', async () => {
    await seedOrder(db.pool, { orderId: 'unk-001', status: 'PAID' });
    const eventId = await insertEvent(db.pool, 'unk-001', 'ORDER_SHIPPED', 4);
    const requestsBefore = consumer.script.requests;
    const relay = createRelay({ ...relayOptions, clock: new ManualClock() });
    expect(await relay.drain()).toEqual({ delivered: 0, failed: 1 });
    expect(consumer.script.requests).toBe(requestsBefore);
    const [row] = await outboxRows(db.pool, 'unk');
    expect(row).toMatchObject({
      event_id: eventId,
      attempts: 1,
      published_at: null,
      last_error: 'unknown event type "ORDER_SHIPPED"',
    });
    expect(row!.dead_at).not.toBeNull();
    await expect(outboxAdmin.redriveDead(db.pool, ['not-an-id'])).rejects.toMatchObject({ code: 'VALIDATION' });
  });

  // The admin drain delivers what is pending *now*, including events waiting out a backoff.
  it('drainOutbox delivers events that are backing off', async () => {
    await seedOrdersWithEvents(db.pool, 'drain', 2, 'PAID');
    const clock = new ManualClock();
    const relay = createRelay({ ...relayOptions, clock, maxAttempts: 10, backoffBaseMs: 60_000 });
    consumer.script.refuseNext = 2;
    expect(await relay.runOnce()).toEqual({ delivered: 0, failed: 2 });
    expect(await relay.drain()).toEqual({ delivered: 0, failed: 0 }); // a minute of backoff ahead
    expect(await outboxAdmin.drainOutbox(relay)).toEqual({ delivered: 2, failed: 0 });
  });
});
