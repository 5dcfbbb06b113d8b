import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelay, type Relay } from '../../src/outbox/relay.ts';
import { listenForWakeups, type WakeupListener } from '../../src/outbox/outbox.wakeup.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { insertEvent, outboxRows, recordingSink, seedOrder, waitFor } from '../support/outbox-fixtures.ts';

// The relay's poll interval here is a minute: anything delivered within seconds was woken by the
// outbox insert's NOTIFY (migration 085), not by the poll.
const POLL_MS = 60_000;
const PROMPT_MS = 5_000;

async function backendPid(db: TestDatabase, applicationName: string): Promise<number | undefined> {
  const result = await db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`,
    [applicationName],
  );
  return result.rows[0]?.pid;
}

describe('LISTEN/NOTIFY wake-up of the relay', () => {
  let db: TestDatabase;
  let relay: Relay;
  let listener: WakeupListener;
  const sink = recordingSink(1);
  const appName = `listener-${randomBytes(3).toString('hex')}`;
  const errors: unknown[] = [];

  beforeAll(async () => {
    db = await freshDatabase();
    relay = createRelay({
      db: db.pool,
      sink,
      owner: 'relay-w',
      leaseMs: 5_000,
      batchSize: 50,
      maxAttempts: 5,
      backoffBaseMs: 10,
    });
    relay.start(POLL_MS);
    listener = listenForWakeups({
      db: db.pool,
      onWake: () => relay.wake(),
      onError: (error) => errors.push(error),
      applicationName: appName,
    });
    await listener.ready;
  });
  afterAll(async () => {
    await listener.stop();
    await relay.stop();
    await db.drop();
  });

  async function insertAndAwaitDelivery(orderId: string): Promise<number> {
    await seedOrder(db.pool, { orderId, status: 'PAID', version: 4 });
    const startedAt = Date.now();
    const eventId = await insertEvent(db.pool, orderId, 'ORDER_PAID', 4);
    await waitFor(
      async () => sink.calls.some((call) => call.event.event_id === eventId),
      `event ${eventId} to be delivered without waiting for the poll`,
      PROMPT_MS,
    );
    await waitFor(
      async () => (await outboxRows(db.pool, orderId.split('-')[0]!))[0]?.published_at !== null,
      'the mark',
    );
    return Date.now() - startedAt;
  }

  it('W1 an insert is delivered at once, not after the poll interval', async () => {
    expect(listener.listening).toBe(true);
    expect(await insertAndAwaitDelivery('w1-001')).toBeLessThan(POLL_MS);
    expect(sink.calls.filter((call) => call.event.order_id === 'w1-001')).toHaveLength(1);
  });

  it('W2 a terminated LISTEN backend reconnects; the process lives and wake-ups resume', async () => {
    const before = await backendPid(db, appName);
    expect(before).toBeDefined();
    const killed = await db.pool.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [before]);
    expect(killed.rows[0]?.ok).toBe(true);
    const after = await waitFor(async () => {
      const pid = await backendPid(db, appName);
      return pid !== undefined && pid !== before && listener.listening ? pid : undefined;
    }, 'the listener to reconnect');
    expect(after).not.toBe(before);
    expect(errors.length).toBeGreaterThanOrEqual(1); // the drop was reported, not thrown
    expect(await insertAndAwaitDelivery('w2-001')).toBeLessThan(POLL_MS);
  });
});
