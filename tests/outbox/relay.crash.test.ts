import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import type { Db } from '../../src/platform/db.ts';
import { consumeWithoutDedup } from '../support/broken-consumer.ts';
import { fulfillmentAdminView } from '../../src/fulfillment/fulfillment.admin.ts';
import { checkEventIntegrity } from '../../src/reconcile/reconcile.events.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { createHttpSink } from '../../src/outbox/sinks/http.sink.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import {
  effectCounts,
  outboxRows,
  seedOrder,
  seedOrdersWithEvents,
  shipCounts,
  startWebhookConsumer,
  TEST_SECRET,
  waitFor,
  type WebhookConsumer,
} from '../support/outbox-fixtures.ts';
import { spawnFixture } from '../support/spawn.ts';
import { everyOf } from '../support/every.ts';

const LEASE_MS = 2_000;

function withApplicationName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', name);
  return parsed.toString();
}

async function sessionsOf(db: Db, applicationName: string): Promise<number> {
  const result = await db.query<{ n: number }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1`,
    [applicationName],
  );
  return result.rows[0]!.n;
}

/**
 * Runs the relay fixture in its own process against `consumer`, lets it get 3 events acknowledged,
 * SIGKILLs it before it marks them, waits for its database sessions to vanish, and checks the
 * outbox is left with 3 unpublished events claimed by the dead relay. Then a new relay, after the
 * lease, delivers them again.
 */
async function crashAfterAckThenRestart(db: TestDatabase, consumer: WebhookConsumer, prefix: string): Promise<void> {
  await seedOrdersWithEvents(db.pool, prefix, 3, 'PAID');
  const owner = `child-${prefix}-${randomBytes(3).toString('hex')}`;
  const child = spawnFixture('relay-child.ts', {
    DATABASE_URL: withApplicationName(db.url, owner),
    WEBHOOK_URL: consumer.url,
    SECRET: TEST_SECRET,
    OWNER: owner,
    LEASE_MS: String(LEASE_MS),
    STAGE_AFTER: '3',
  });
  await child.waitFor('STAGE');
  expect(await sessionsOf(db.pool, owner)).toBeGreaterThan(0); // its pool is connected (so the wait below means something)
  expect(await effectCounts(db.pool, prefix)).toEqual({ APPLIED: 3 }); // the consumer acknowledged all 3
  expect(await child.kill9()).toBe('SIGKILL'); // kill -9: exit by signal, no cleanup ran
  await waitFor(async () => (await sessionsOf(db.pool, owner)) === 0, 'the killed relay’s sessions to disappear');

  const stranded = await outboxRows(db.pool, prefix);
  expect(stranded.map((r) => [r.published_at, r.claimed_by])).toEqual([
    [null, owner],
    [null, owner],
    [null, owner],
  ]);

  const clock = new ManualClock();
  const sink = createHttpSink({ url: consumer.url, secret: TEST_SECRET, timeoutMs: 1_000 });
  const restarted = createRelay({
    db: db.pool,
    sink,
    clock,
    owner: `restart-${prefix}`,
    leaseMs: LEASE_MS,
    batchSize: 10,
    maxAttempts: 5,
    backoffBaseMs: 10,
  });
  expect(await restarted.drain()).toEqual({ delivered: 0, failed: 0 }); // the dead relay's lease still protects them
  clock.advance(LEASE_MS + 1);
  expect(await restarted.drain()).toEqual({ delivered: 3, failed: 0 });
  expect(
    everyOf(await outboxRows(db.pool, prefix), (r) => r.published_at !== null && r.claimed_by === `restart-${prefix}`),
  ).toBe(true);
}

describe('relay killed between the consumer’s ack and the published mark', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  // C29-12: delivery is at least once — a relay killed after the consumer acknowledged 3 events
  // but before marking them leaves them unpublished; the restarted relay re-sends them and the
  // consumer's inbox turns the second copies into DUPLICATE, so each order ships once.
  it('C29-12 redelivers the 3 unmarked events after restart; the consumer reports APPLIED=3 + DUPLICATE=3, each order shipped once', async () => {
    const consumer = await startWebhookConsumer(db.pool);
    try {
      await crashAfterAckThenRestart(db, consumer, 'c12');
      expect(await effectCounts(db.pool, 'c12')).toEqual({ APPLIED: 3, DUPLICATE: 3 });
      expect(await shipCounts(db.pool, 'c12')).toEqual({ 'c12-001': 1, 'c12-002': 1, 'c12-003': 1 });
      expect((await checkEventIntegrity(db.pool)).duplicate_shipments).toBe(0);
    } finally {
      await consumer.close();
    }
  });

  // C29-18 (negative control): the same crash against a consumer without its inbox and version
  // checks ships every order twice — the dedup is what makes at-least-once delivery safe.
  it('C29-18 with consumer dedup disabled the same crash ships each order twice', async () => {
    const consumer = await startWebhookConsumer(db.pool, { consumeFn: consumeWithoutDedup });
    try {
      await crashAfterAckThenRestart(db, consumer, 'c18');
      expect(await effectCounts(db.pool, 'c18')).toEqual({ APPLIED: 6 });
      expect(await shipCounts(db.pool, 'c18')).toEqual({ 'c18-001': 2, 'c18-002': 2, 'c18-003': 2 });
      expect((await checkEventIntegrity(db.pool)).duplicate_shipments).toBe(3);
    } finally {
      await consumer.close();
    }
  });

  // C29-19 (negative control): a dual write without the outbox — commit PAID, then notify the
  // consumer directly — killed between the two steps loses the event for good: no relay has
  // anything to re-send. Only the event-integrity check sees it.
  it('C29-19 a dual write without outbox killed before notifying loses the event; integrity reports paid_without_event = 1', async () => {
    await seedOrder(db.pool, { orderId: 'c19-001', status: 'PAYING', version: 2 });
    const before = await checkEventIntegrity(db.pool);
    const child = spawnFixture('dual-write-child.ts', { DATABASE_URL: db.url, ORDER_ID: 'c19-001' });
    await child.waitFor('STAGE');
    expect(await child.kill9()).toBe('SIGKILL');

    const order = await db.pool.query(`SELECT status, version FROM orders WHERE order_id = 'c19-001'`);
    expect(order.rows[0]).toEqual({ status: 'PAID', version: 3 });
    expect(await outboxRows(db.pool, 'c19')).toEqual([]);
    const sink = createHttpSink({ url: 'http://127.0.0.1:9/unused', secret: TEST_SECRET, timeoutMs: 100 });
    const relay = createRelay({ db: db.pool, sink, leaseMs: 1_000, batchSize: 10, maxAttempts: 1, backoffBaseMs: 10 });
    expect(await relay.drain()).toEqual({ delivered: 0, failed: 0 }); // nothing to re-send
    expect(await fulfillmentAdminView(db.pool, 'c19-001')).toBeNull(); // the consumer never hears of it

    const after = await checkEventIntegrity(db.pool);
    expect(after.paid_without_event - before.paid_without_event).toBe(1);
    expect(after.paid_without_event_ids).toEqual(['c19-001']);
    expect(after.terminal_without_event).toBe(1);
  });
});
