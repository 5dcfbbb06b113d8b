import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import { armFaultPoint } from '../../src/platform/faultpoints.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { createHttpSink } from '../../src/outbox/sinks/http.sink.ts';
import type { TestDatabase } from '../support/db.ts';
import {
  effectCounts,
  outboxRows,
  seedOrdersWithEvents,
  shipCounts,
  TEST_SECRET,
  waitFor,
  type WebhookConsumer,
  openConsumer,
} from '../support/outbox-fixtures.ts';
import { everyOf } from '../support/every.ts';

const LEASE_MS = 30_000; // seed 004's lease; the manual clock makes it free to wait out

describe('claim leases', () => {
  let db: TestDatabase;
  let consumer: WebhookConsumer;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, consumer, close } = await openConsumer());
  });
  let disarm = () => undefined as void;
  afterAll(async () => {
    disarm();
    await close();
  });

  // A relay that claims an event and then hangs keeps it only for its lease: afterwards another
  // relay takes the claim over and delivers; the consumer applies the effect once, and the hung
  // relay, if it ever wakes, cannot mark an event it no longer owns.
  it('a relay that claims and hangs is overtaken after the lease; the effect is applied once', async () => {
    await seedOrdersWithEvents(db.pool, 'lease', 2, 'PAID');
    const clock = new ManualClock();
    const sink = createHttpSink({ url: consumer.url, secret: TEST_SECRET, timeoutMs: 2_000 });
    let hung = 0;
    let wakeHung: () => void = () => undefined;
    const hanging = new Promise<void>((resolve) => (wakeHung = resolve));
    const options = { db: db.pool, sink, clock, leaseMs: LEASE_MS, batchSize: 10, maxAttempts: 5, backoffBaseMs: 10 };
    const relayA = createRelay({ ...options, owner: 'relay-A' });
    disarm = armFaultPoint('relay.after-deliver-before-mark', async ({ owner }) => {
      if (owner !== 'relay-A') return;
      hung++;
      await hanging;
    });
    const relayB = createRelay({ ...options, owner: 'relay-B' });

    const runA = relayA.runOnce();
    await waitFor(async () => hung === 2, 'relay A to hang after the consumer acknowledged both events');
    expect(await effectCounts(db.pool, 'lease')).toEqual({ APPLIED: 2 });

    clock.advance(LEASE_MS - 1);
    expect(await relayB.runOnce()).toEqual({ delivered: 0, failed: 0 }); // still A's
    clock.advance(2);
    expect(await relayB.runOnce()).toEqual({ delivered: 2, failed: 0 }); // taken over
    const published = await outboxRows(db.pool, 'lease');
    expect(published.map((r) => r.claimed_by)).toEqual(['relay-B', 'relay-B']);
    expect(everyOf(published, (r) => r.published_at !== null)).toBe(true);

    wakeHung(); // A wakes up late: its guarded mark (claimed_by = 'relay-A') updates nothing
    expect(await runA).toEqual({ delivered: 2, failed: 0 });
    expect(await outboxRows(db.pool, 'lease')).toEqual(published);
    expect(await effectCounts(db.pool, 'lease')).toEqual({ APPLIED: 2, DUPLICATE: 2 });
    expect(await shipCounts(db.pool, 'lease')).toEqual({ 'lease-001': 1, 'lease-002': 1 });
  });
});
