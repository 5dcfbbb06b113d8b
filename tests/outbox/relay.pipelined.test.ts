import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/platform/db.ts';
import type { OutboxEvent, Sink } from '../../src/outbox/outbox.events.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { insertEvent, outboxRows, recordingSink, seedOrder, seedOrdersWithEvents } from '../support/outbox-fixtures.ts';
import { everyOf } from '../support/every.ts';

// Issue 16, task D: a relay's drain is pipelined (the next claim and the last mark overlap the
// delivery). These pin what that must not change: an order's events in version order within ONE
// drain, one batch at a time to the sink, and a fault leaving no batch leased for nothing.

const RELAY = { leaseMs: 30_000, maxAttempts: 5, backoffBaseMs: 10, onError: () => undefined };

/** The pool, with every statement containing `fragment` failing while `failing.on` is set (a database fault). */
function failingStatements(pool: Db, failing: { on: boolean }, fragment: string, what: string): Db {
  return new Proxy(pool, {
    get(target, property) {
      if (property === 'query') {
        return (query: unknown, ...rest: unknown[]) =>
          failing.on && typeof query === 'string' && query.includes(fragment)
            ? Promise.reject(new Error(`injected: ${what} failed`))
            : (target.query as (...args: unknown[]) => unknown)(query, ...rest);
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const failingMarks = (pool: Db, failing: { on: boolean }) =>
  failingStatements(pool, failing, 'SET published_at', 'the mark');

describe('a pipelined relay drain', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ poolSize: 8 });
  });
  afterAll(async () => db.drop());

  // The claim made ahead (before the last mark committed) comes back empty while the next version
  // waits on that mark; the drain must claim once more after the mark rather than stop.
  it('RP1 one drain delivers a chain of five versions of one order, in version order', async () => {
    await seedOrder(db.pool, { orderId: 'rp1-chain', status: 'REFUNDED', version: 9 });
    for (const version of [5, 6, 7, 8, 9]) await insertEvent(db.pool, 'rp1-chain', 'ORDER_PAID', version);
    const sink = recordingSink(3);
    const relay = createRelay({ db: db.pool, sink, owner: 'rp1', ...RELAY, batchSize: 2 });

    const result = await relay.drain();

    expect(result).toEqual({ delivered: 5, failed: 0 });
    expect(sink.calls.map((call) => call.event.order_version)).toEqual([5, 6, 7, 8, 9]);
    for (let i = 1; i < sink.calls.length; i++)
      expect(sink.calls[i]!.startedAt).toBeGreaterThan(sink.calls[i - 1]!.ackedAt); // after the previous ack
    const rows = await outboxRows(db.pool, 'rp1');
    expect(rows.filter((row) => row.published_at !== null)).toHaveLength(5);
  });

  // While batch 1 is at the sink, batch 2 is already claimed by the same relay (not yet handed over):
  // the claim no longer waits for the delivery. The sink never has two batches of one relay at once.
  it('RP2 the next batch is claimed while the current one is delivered; one batch at a time at the sink', async () => {
    await seedOrdersWithEvents(db.pool, 'rp2', 9, 'PAID');
    let inFlight = 0;
    let maxInFlight = 0;
    const claimedAheadSeen: number[] = [];
    const sink: Sink = {
      async deliver() {},
      async deliverBatch(events: OutboxEvent[]) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        const mine = new Set(events.map((e) => e.event_id));
        let ahead = 0;
        for (let tries = 0; tries < 100 && ahead === 0; tries++) {
          const claimed = await db.pool.query<{ event_id: string }>(
            `SELECT event_id::text FROM outbox WHERE order_id LIKE 'rp2-%' AND claimed_by = 'rp2' AND published_at IS NULL`,
          );
          ahead = claimed.rows.filter((row) => !mine.has(row.event_id)).length;
          if (ahead === 0) await new Promise((resolve) => setTimeout(resolve, 20));
        }
        claimedAheadSeen.push(ahead);
        inFlight--;
        return events.map(() => null);
      },
      async close() {},
    };
    const relay = createRelay({ db: db.pool, sink, owner: 'rp2', ...RELAY, batchSize: 4 });

    expect(await relay.drain()).toEqual({ delivered: 9, failed: 0 });

    expect(maxInFlight).toBe(1);
    expect(claimedAheadSeen.slice(0, 2)).toEqual([4, 1]); // batches of 4, 4, 1: each of the first two saw the next one claimed
    const rows = await outboxRows(db.pool, 'rp2');
    expect(everyOf(rows, (row) => row.published_at !== null && row.claimed_by === 'rp2')).toBe(true);
  });

  // A database fault mid-drain (the mark fails): the drain reports it, the batch claimed ahead is
  // given back at once instead of sitting out a 30 s lease, and a healthy relay delivers the rest.
  it('RP3 a failed mark ends the drain and releases the batch claimed ahead', async () => {
    await seedOrdersWithEvents(db.pool, 'rp3', 9, 'PAID');
    const failing = { on: true };
    const sink = recordingSink(0);
    const relay = createRelay({ db: failingMarks(db.pool, failing), sink, owner: 'rp3', ...RELAY, batchSize: 3 });

    await expect(relay.drain()).rejects.toThrow('injected: the mark failed');

    const rows = await outboxRows(db.pool, 'rp3');
    const delivered = new Set(sink.calls.map((call) => String(call.event.event_id)));
    const stillLeased = rows.filter((row) => row.claimed_by === 'rp3' && row.published_at === null);
    const released = rows.filter((row) => row.claimed_by === null && row.published_at === null);
    // What the sink acknowledged but could not be marked stays leased (redelivered after the lease).
    expect(stillLeased.map((row) => String(row.event_id)).sort()).toEqual([...delivered].sort());
    expect(released).toHaveLength(9 - delivered.size); // the rest is claimable now
    expect(released.length).toBeGreaterThan(0);

    failing.on = false;
    const healthy = createRelay({ db: db.pool, sink, owner: 'rp3-healthy', ...RELAY, batchSize: 3 });
    expect(await healthy.drain()).toEqual({ delivered: released.length, failed: 0 });
    expect((await outboxRows(db.pool, 'rp3')).filter((row) => row.published_at !== null)).toHaveLength(released.length);
  });

  it('RP4 once the database answers again, the same relay marks what it delivered before it claims: nothing waits out its lease, nothing is sent twice', async () => {
    await seedOrdersWithEvents(db.pool, 'rp4', 6, 'PAID');
    const failing = { on: true };
    const sink = recordingSink(0);
    const relay = createRelay({ db: failingMarks(db.pool, failing), sink, owner: 'rp4', ...RELAY, batchSize: 3 });

    await expect(relay.drain()).rejects.toThrow('injected: the mark failed');
    const delivered = sink.calls.map((call) => String(call.event.event_id)).sort();
    expect(delivered.length).toBeGreaterThan(0);
    // The blip goes on: the next drain fails at its first statement and claims nothing new.
    await expect(relay.drain()).rejects.toThrow('injected: the mark failed');
    expect(sink.calls.map((call) => String(call.event.event_id)).sort()).toEqual(delivered);

    failing.on = false;
    const after = await relay.drain();
    const rows = await outboxRows(db.pool, 'rp4');
    // Every event published, inside the 30 s lease of the failed pass; the acknowledged ones were
    // marked, not redelivered, and the sink saw each event exactly once.
    expect(everyOf(rows, (row) => row.published_at !== null)).toBe(true);
    expect(after.delivered).toBe(6 - delivered.length);
    const sent = sink.calls.map((call) => String(call.event.event_id));
    expect(sent).toHaveLength(6);
    expect(new Set(sent).size).toBe(6);
  });

  it('RP5 a refusal whose backoff cannot be written is given back once the database answers: sent again at once, not after the lease', async () => {
    await seedOrdersWithEvents(db.pool, 'rp5', 3, 'PAID');
    const failing = { on: true };
    const refusing = recordingSink(0);
    let refused = 0;
    const sink: Sink = {
      ...refusing,
      async deliver(event) {
        if (failing.on) {
          refused++;
          throw new Error('the consumer is down too');
        }
        await refusing.deliver(event);
      },
    };
    const pool = failingStatements(db.pool, failing, 'attempts = attempts + 1', 'the backoff record');
    const relay = createRelay({ db: pool, sink, owner: 'rp5', ...RELAY, batchSize: 3 });

    await expect(relay.drain()).rejects.toThrow('injected: the backoff record failed');
    expect(refused).toBe(3);
    const leased = await outboxRows(db.pool, 'rp5');
    expect(everyOf(leased, (row) => row.claimed_by === 'rp5' && row.published_at === null)).toBe(true);

    failing.on = false;
    expect(await relay.drain()).toEqual({ delivered: 3, failed: 0 });
    const rows = await outboxRows(db.pool, 'rp5');
    expect(everyOf(rows, (row) => row.published_at !== null)).toBe(true);
    expect(refusing.calls).toHaveLength(3);
  });
});
