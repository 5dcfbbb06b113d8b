import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import { signPayload } from '../../src/platform/signature.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { createHttpSink } from '../../src/outbox/sinks/http.sink.ts';
import { checkEventIntegrity } from '../../src/reconcile/reconcile.events.ts';
import type { TestDatabase } from '../support/db.ts';
import {
  effectCounts,
  insertEvent,
  openConsumer,
  outboxRows,
  seedOrder,
  seedOrdersWithEvents,
  shipCounts,
  TEST_SECRET,
  waitFor,
  type WebhookConsumer,
} from '../support/outbox-fixtures.ts';
import { spawnFixture } from '../support/spawn.ts';
import { everyOf } from '../support/every.ts';

const LEASE_MS = 2_000;

function event(eventId: string, orderId: string, version = 4, type = 'ORDER_PAID') {
  return { event_id: eventId, order_id: orderId, event_type: type, order_version: version, payload: { amount: 1990 } };
}

async function postBatch(url: string, events: unknown[]): Promise<{ status: number; json: Record<string, unknown> }> {
  const body = JSON.stringify({ events });
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'flashpay-signature': signPayload(TEST_SECRET, body) },
    body,
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

function batchRelay(db: TestDatabase, consumer: WebhookConsumer, owner: string, clock?: ManualClock) {
  const sink = createHttpSink({
    url: consumer.url,
    batchUrl: `${consumer.url}/batch`,
    secret: TEST_SECRET,
    timeoutMs: 1_000,
  });
  return createRelay({
    db: db.pool,
    sink,
    clock,
    owner,
    leaseMs: LEASE_MS,
    batchSize: 50,
    maxAttempts: 5,
    backoffBaseMs: 10,
  });
}

// The batch webhook and the relay's batch mode: one request and one consumer transaction per pass,
// with the inbox guarantees of the single-event webhook for every event.
describe('batch delivery to the fulfillment consumer', () => {
  let db: TestDatabase;
  let consumer: WebhookConsumer;
  let close: () => Promise<void>;
  let batchUrl: string;
  beforeAll(async () => {
    ({ db, consumer, close } = await openConsumer());
    batchUrl = `${consumer.url}/batch`;
  });
  afterAll(async () => close());

  it('B1 applies duplicates inside one batch and across batches once, STALE for an older version', async () => {
    const first = await postBatch(batchUrl, [event('b1-1', 'b1-a'), event('b1-2', 'b1-b'), event('b1-1', 'b1-a')]);
    expect(first).toEqual({
      status: 200,
      json: {
        results: [
          { event_id: 'b1-1', effect: 'APPLIED' },
          { event_id: 'b1-2', effect: 'APPLIED' },
          { event_id: 'b1-1', effect: 'DUPLICATE' },
        ],
      },
    });
    // Across batches: the same ids again, plus an older version of b1-b under a new id.
    const second = await postBatch(batchUrl, [event('b1-2', 'b1-b'), event('b1-1', 'b1-a'), event('b1-3', 'b1-b', 3)]);
    expect(second.json).toEqual({
      results: [
        { event_id: 'b1-2', effect: 'DUPLICATE' },
        { event_id: 'b1-1', effect: 'DUPLICATE' },
        { event_id: 'b1-3', effect: 'STALE' },
      ],
    });
    expect(await effectCounts(db.pool, 'b1')).toEqual({ APPLIED: 2, DUPLICATE: 3, STALE: 1 });
    expect(await shipCounts(db.pool, 'b1')).toEqual({ 'b1-a': 1, 'b1-b': 1 });
  });

  it('B2 refuses an unsigned batch with 400 BAD_SIGNATURE and records nothing', async () => {
    const body = JSON.stringify({ events: [event('b2-1', 'b2-a')] });
    const response = await fetch(batchUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { code: string }).code).toBe('BAD_SIGNATURE');
    const forged = await fetch(batchUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'flashpay-signature': signPayload('wrong', body) },
      body,
    });
    expect(forged.status).toBe(400);
    expect(await effectCounts(db.pool, 'b2')).toEqual({});
  });

  it('B3 a relay pass of 30 events is one request; every event published, applied once, shipped once', async () => {
    await seedOrdersWithEvents(db.pool, 'b3', 30, 'PAID');
    const before = consumer.script.requests;
    const relay = batchRelay(db, consumer, 'relay-b3');
    expect(await relay.drain()).toEqual({ delivered: 30, failed: 0 });
    expect(consumer.script.requests - before).toBe(1);
    expect(everyOf(await outboxRows(db.pool, 'b3'), (r) => r.published_at !== null && r.attempts === 0)).toBe(true);
    expect(await effectCounts(db.pool, 'b3')).toEqual({ APPLIED: 30 });
    expect(Object.values(await shipCounts(db.pool, 'b3'))).toEqual(Array(30).fill(1));
  });

  it('B4 a poisoned event is parked on its own while the rest of its batch applies', async () => {
    await seedOrdersWithEvents(db.pool, 'b4', 5, 'PAID');
    // The consumer's storage refuses one order (a real failure inside its transaction, not a mock).
    await db.pool.query(`
      CREATE FUNCTION b4_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.order_id = 'b4-003' THEN RAISE EXCEPTION 'poisoned order %', NEW.order_id; END IF; RETURN NEW; END $$;
      CREATE TRIGGER b4_poison BEFORE INSERT ON fulfillment FOR EACH ROW EXECUTE FUNCTION b4_poison();`);
    const relay = createRelay({
      db: db.pool,
      sink: createHttpSink({ url: consumer.url, batchUrl, secret: TEST_SECRET, timeoutMs: 1_000 }),
      owner: 'relay-b4',
      leaseMs: LEASE_MS,
      batchSize: 50,
      maxAttempts: 2,
      backoffBaseMs: 10,
      onError: () => undefined,
    });
    expect(await relay.runOnce()).toEqual({ delivered: 4, failed: 1 });
    expect(await effectCounts(db.pool, 'b4')).toEqual({ APPLIED: 4, ERROR: 1 });
    await relay.drain({ force: true }); // the second attempt fails too: parked (maxAttempts 2)
    const rows = await outboxRows(db.pool, 'b4');
    expect(rows.filter((r) => r.published_at !== null).map((r) => r.order_id)).toEqual([
      'b4-001',
      'b4-002',
      'b4-004',
      'b4-005',
    ]);
    const poisoned = rows.find((r) => r.order_id === 'b4-003')!;
    expect(poisoned).toMatchObject({ published_at: null, attempts: 2 });
    expect(poisoned.dead_at).not.toBeNull();
    expect(poisoned.last_error).toContain('poisoned order b4-003');
    // Fixed and re-driven: it applies once, and nothing else was applied twice.
    await db.pool.query('DROP TRIGGER b4_poison ON fulfillment');
    await db.pool.query(`UPDATE outbox SET dead_at = NULL, attempts = 0 WHERE order_id = 'b4-003'`);
    expect(await relay.drain({ force: true })).toEqual({ delivered: 1, failed: 0 });
    expect(await effectCounts(db.pool, 'b4')).toEqual({ APPLIED: 5, ERROR: 2 });
    expect(Object.values(await shipCounts(db.pool, 'b4'))).toEqual([1, 1, 1, 1, 1]);
  });

  it('B5 a relay killed between the batch ack and the mark: the redelivered batch is applied once', async () => {
    await seedOrdersWithEvents(db.pool, 'b5', 4, 'PAID');
    const owner = `child-b5-${randomBytes(3).toString('hex')}`;
    const url = new URL(db.url);
    url.searchParams.set('application_name', owner);
    const child = spawnFixture('relay-child.ts', {
      DATABASE_URL: url.toString(),
      WEBHOOK_URL: consumer.url,
      SECRET: TEST_SECRET,
      OWNER: owner,
      LEASE_MS: String(LEASE_MS),
      STAGE_AFTER: '4',
      BATCH: '1',
    });
    await child.waitFor('STAGE');
    expect(await effectCounts(db.pool, 'b5')).toEqual({ APPLIED: 4 }); // acknowledged, one request
    expect(await child.kill9()).toBe('SIGKILL');
    await waitFor(
      async () =>
        (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1`, [owner])).rowCount === 0,
      'the killed relay’s sessions to disappear',
    );
    expect(everyOf(await outboxRows(db.pool, 'b5'), (r) => r.published_at === null && r.claimed_by === owner)).toBe(
      true,
    );
    const clock = new ManualClock();
    const restarted = batchRelay(db, consumer, 'restart-b5', clock);
    expect(await restarted.drain()).toEqual({ delivered: 0, failed: 0 }); // the lease still protects them
    clock.advance(LEASE_MS + 1);
    expect(await restarted.drain()).toEqual({ delivered: 4, failed: 0 });
    expect(await effectCounts(db.pool, 'b5')).toEqual({ APPLIED: 4, DUPLICATE: 4 });
    expect(Object.values(await shipCounts(db.pool, 'b5'))).toEqual([1, 1, 1, 1]);
    expect((await checkEventIntegrity(db.pool)).duplicate_shipments).toBe(0);
  });

  it('B6 two versions of one order in one batch apply in order (one by one, under savepoints)', async () => {
    await seedOrder(db.pool, { orderId: 'b6-a', status: 'PAID', version: 4 });
    const refunded = await insertEvent(db.pool, 'b6-a', 'ORDER_REFUNDED', 6);
    const answer = await postBatch(batchUrl, [event('b6-1', 'b6-a', 4), event(refunded, 'b6-a', 6, 'ORDER_REFUNDED')]);
    expect(answer.json).toEqual({
      results: [
        { event_id: 'b6-1', effect: 'APPLIED' },
        { event_id: refunded, effect: 'APPLIED' },
      ],
    });
    const state = await db.pool.query(
      `SELECT last_version, last_event_type, ship_count FROM fulfillment WHERE order_id = 'b6-a'`,
    );
    expect(state.rows[0]).toEqual({ last_version: 6, last_event_type: 'ORDER_REFUNDED', ship_count: 1 });
  });
});
