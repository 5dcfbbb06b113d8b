import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAmqpConsumer } from '../../src/fulfillment/consumers/amqp.consumer.ts';
import type { RunningConsumer } from '../../src/fulfillment/consumers/running.ts';
import type { Sink } from '../../src/outbox/outbox.events.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { createAmqpSink } from '../../src/outbox/sinks/amqp.sink.ts';
import { createPool, type Db } from '../../src/platform/db.ts';
import { ensureDatabase, startEmbedded, type EmbeddedCluster } from '../../src/platform/embedded.ts';
import { migrate } from '../../src/platform/migrate.ts';
import { effectCounts, seedOrdersWithEvents, shipCounts } from '../support/outbox-fixtures.ts';
import { waitFor } from '../support/poll.ts';
import { rabbitmqInstalled, startRabbitCluster, type RabbitCluster } from './rabbit.ts';
import { everyOf } from '../support/every.ts';

// Issue 39: the outbox → RabbitMQ → fulfillment path on a 3-node RabbitMQ cluster, AMQP_URL naming
// all three nodes. RC-01: with quorum queues, kill -9 of the queue's leader node mid-relay loses
// nothing and applies every event exactly once. RC-02 (negative control): a classic queue lives on
// one node; with that node killed its confirmed events are out of reach of the consumer.

const found = rabbitmqInstalled();
const PORTS = [26391, 26392, 26393]; // away from the machine's own broker (5672) and PostgreSQL/NATS
const EVENTS = 200;
const log = (line: string) => process.stderr.write(`rabbitmq-cluster: ${line}\n`);

describe.skipIf(!found.ok)(found.ok ? 'flashpay on a RabbitMQ cluster' : found.why, () => {
  let cluster: RabbitCluster;
  let pg: EmbeddedCluster;
  let dataDir: string;
  let db: Db;
  const closers: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-rc-pg-'));
    pg = await startEmbedded({ dataDir, persistent: false });
    await ensureDatabase(pg.url('postgres'), 'flashpay');
    await migrate(pg.url('flashpay'));
    db = createPool(pg.url('flashpay'), 8);
    cluster = await startRabbitCluster(PORTS, log);
  });

  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await db?.end();
    await cluster?.stop();
    await pg?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** Relay passes of 10 events until all are published; `during` runs (not awaited) after the 5th. */
  async function relayAll(sink: Sink, prefix: string, during?: () => Promise<void>): Promise<number> {
    const errors = new Map<string, number>();
    const relay = createRelay({
      onError: (error) => {
        const text = String(error).slice(0, 160);
        errors.set(text, (errors.get(text) ?? 0) + 1);
      },
      db,
      sink,
      leaseMs: 5_000,
      batchSize: 10,
      maxAttempts: 1_000,
      backoffBaseMs: 50,
      backoffMaxMs: 500,
    });
    let passes = 0;
    let fault: Promise<void> | undefined;
    const deadline = Date.now() + 90_000;
    for (;;) {
      const published = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NOT NULL AND order_id LIKE $1',
        [`${prefix}-%`],
      );
      if (published.rows[0]?.n === EVENTS) break;
      if (Date.now() > deadline) {
        const rows = await db.query(
          `SELECT left(last_error, 200) AS error, count(*)::int AS n
           FROM outbox WHERE published_at IS NULL AND order_id LIKE $1 GROUP BY 1`,
          [`${prefix}-%`],
        );
        log(`unpublished: ${JSON.stringify(rows.rows.slice(-3))}`);
        const alive = cluster.nodes.find((n) => n.child.exitCode === null && n.child.signalCode === null)!;
        log(await cluster.ctl(alive, ['list_queues', 'name', 'type', 'leader', 'members', 'online', 'messages']));
        throw new Error(`relay: ${published.rows[0]?.n}/${EVENTS} published; errors: ${JSON.stringify([...errors])}`);
      }
      // A pass that failed (the broker nacks while the queue elects a leader) is followed by a pause,
      // as the relay's loop waits for its interval.
      const pass = await relay.runOnce().catch(() => ({ delivered: 0, failed: 1 }));
      if (process.env.RC_DEBUG) log(`pass ${passes}: ${JSON.stringify(pass)}`);
      if (pass.failed > 0) await new Promise((resolve) => setTimeout(resolve, 200));
      if (++passes === 5 && during) fault = during();
    }
    await fault;
    return passes;
  }

  it('RC-01 quorum queue, kill -9 of its leader node mid-relay: 200/200 events applied exactly once', async () => {
    const topology = { exchange: 'rc1.orders', queue: 'rc1.fulfillment' };
    const errors: unknown[] = [];
    const sink = await createAmqpSink({ url: cluster.url, topology, quorum: true });
    closers.push(() => sink.close());
    const consumer: RunningConsumer = await startAmqpConsumer({
      url: cluster.url,
      db,
      topology,
      quorum: true,
      onError: (error) => errors.push(error),
    });
    closers.push(() => consumer.stop());
    const types = await cluster.ctl(cluster.nodes[1]!, [
      'list_queues',
      '--quiet',
      '--no-table-headers',
      'name',
      'type',
    ]);
    expect(types).toMatch(/rc1\.fulfillment\s+quorum/);
    expect(types).toMatch(/rc1\.fulfillment\.dlq\s+quorum/);
    const leader = await cluster.leaderOf(topology.queue, cluster.nodes[1]!);
    log(`leader of ${topology.queue}: ${leader.name}`);

    await seedOrdersWithEvents(db, 'rc1', EVENTS);
    const killedAt = { applied: -1 };
    await relayAll(sink, 'rc1', async () => {
      killedAt.applied = (await effectCounts(db, 'rc1')).APPLIED ?? 0;
      await cluster.kill(leader);
      log(`killed ${leader.name} with ${killedAt.applied} applied`);
    });
    expect(killedAt.applied).toBeLessThan(EVENTS); // the kill came mid-relay

    const ships = await waitFor(
      async () => {
        const counts = await shipCounts(db, 'rc1');
        return Object.keys(counts).length === EVENTS ? counts : undefined;
      },
      'every event applied',
      60_000,
      200,
    );
    expect(everyOf(Object.values(ships), (n) => n === 1)).toBe(true); // exactly once: copies were DUPLICATE
    expect((await effectCounts(db, 'rc1')).APPLIED).toBe(EVENTS);
    const survivor = cluster.nodes.find((n) => n !== leader)!;
    const newLeader = await cluster.leaderOf(topology.queue, survivor);
    expect(newLeader).not.toBe(leader);
  });

  it('RC-02 negative control: a classic queue on the killed node: its confirmed events are unavailable (0/200 in 10 s)', async () => {
    const alive = cluster.nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
    expect(alive.length).toBeGreaterThanOrEqual(2);
    const [home, other] = alive as [(typeof alive)[0], (typeof alive)[0]];
    const topology = { exchange: 'rc2.orders', queue: 'rc2.fulfillment' };
    // Declared (and so homed) on `home`: publishing through it, every event confirmed by the broker.
    const sink = await createAmqpSink({ url: cluster.urlOf(home), topology, quorum: false });
    closers.push(() => sink.close());
    await seedOrdersWithEvents(db, 'rc2', EVENTS);
    await relayAll(sink, 'rc2');
    await sink.close();
    await cluster.kill(home);
    log(`killed ${home.name}, the classic queue's node`);

    // The consumer tries the whole cluster URL for 10 s; only `other` still answers.
    const errors: string[] = [];
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const consumer = await startAmqpConsumer({
        url: cluster.url,
        db,
        topology,
        quorum: false,
        onError: (error) => errors.push(String(error)),
      }).catch((error: unknown) => void errors.push(String(error)));
      if (consumer) closers.push(() => consumer.stop());
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect(Object.keys(await shipCounts(db, 'rc2'))).toHaveLength(0);
    expect(errors.join('\n')).toMatch(/down or inaccessible|NOT_FOUND|home node/i);
    expect(other.child.exitCode).toBeNull();
  });
});
