import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findNatsServer, startNatsCluster, streamLeader, type NatsCluster } from '../../src/cluster/nats.ts';
import { startJetStreamConsumer } from '../../src/fulfillment/consumers/jetstream.consumer.ts';
import type { Sink } from '../../src/outbox/outbox.events.ts';
import { createRelay, type Relay } from '../../src/outbox/relay.ts';
import { createSinkFromConfig } from '../../src/outbox/sinks/index.ts';
import { createNatsSink, ensureStream } from '../../src/outbox/sinks/nats.sink.ts';
import { loadConfig } from '../../src/platform/config.ts';
import type { Db } from '../../src/platform/db.ts';
import { effectCounts, outboxRows, seedOrdersWithEvents, shipCounts, waitFor } from '../support/outbox-fixtures.ts';
import { scratchDatabase } from '../support/scratch-db.ts';
import { everyOf } from '../support/every.ts';

// A JetStream cluster of three nats-server processes loses one node (kill -9, the stream's leader)
// while the relay delivers paid-order events. With the streams at 3 replicas nothing is lost and
// each event is applied once: a publish whose PubAck died with the leader stays unpublished and is
// sent again, the stream drops the copy by Nats-Msg-Id, the consumer's inbox drops a redelivery.
// The control puts a stream at 1 replica and kills its only node: then the events stay undelivered.

const EVENTS = 300;
const BATCH = 25; // twelve passes: the kill lands with most of the events still to go
const RELAY = { leaseMs: 10_000, batchSize: BATCH, maxAttempts: 1_000, backoffBaseMs: 10, backoffMaxMs: 500 };

const binary = findNatsServer();
const runIt = binary !== undefined || process.env.FLASHPAY_REQUIRE_CLUSTER === '1';
if (!runIt) console.warn('tests/cluster/nats-cluster.test.ts skipped: no nats-server (apt-get install -y nats-server)');

/** A sink that kills a node right after the `nth` pass's publishes are sent, before their PubAcks. */
function killingSink(real: Sink, nth: number, kill: () => Promise<void>): Sink & { killed: Promise<void> | undefined } {
  let passes = 0;
  const sink: Sink & { killed: Promise<void> | undefined } = {
    killed: undefined,
    deliver: (event) => real.deliver(event),
    deliverBatch(events) {
      const answers = real.deliverBatch!(events);
      if (++passes === nth) sink.killed = kill();
      return answers;
    },
    close: () => real.close(),
  };
  return sink;
}

async function drainUntilPublished(db: Db, relay: Relay, prefix: string, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      await relay.drain({ force: true });
      return everyOf(await outboxRows(db, prefix), (r) => r.published_at !== null);
    },
    'every outbox row to be published',
    timeoutMs,
    100,
  );
}

const count = async (db: Db, sql: string, prefix: string) =>
  Number((await db.query<{ n: string }>(sql, [`${prefix}-%`])).rows[0]?.n ?? 0);

describe.skipIf(!runIt)('JetStream cluster: a node dies while the relay delivers', () => {
  let dir: string;
  let cluster: NatsCluster;
  let database: Awaited<ReturnType<typeof scratchDatabase>>;
  let admin: NatsConnection;
  const suffix = randomBytes(4).toString('hex');
  const topologyOf = (tag: string) => ({
    stream: `FLASHPAY_${tag}_${suffix}`,
    subjectPrefix: `flashpay.${tag.toLowerCase()}${suffix}.orders`,
    durable: `${tag.toLowerCase()}-${suffix}`,
  });
  // The JetStream API answers only once its meta, stream and consumer groups have leaders: killing a
  // node that led them all costs a raft election (seconds; nats-server waits 4-9 s before it calls
  // one). The client's 5 s default failed NC-01..03 once in a clean-clone CI (stop 47) while the
  // remaining two nodes elected: the test's questions wait for the election they are about.
  const manager = () => jetstreamManager(admin, { timeout: 30_000 });
  const info = async (stream: string): Promise<StreamInfo> => (await manager()).streams.info(stream);
  const leaderOf = (stream: string) =>
    waitFor(() => streamLeader(cluster.servers, stream).catch(() => undefined), `a leader of ${stream}`, 20_000, 100);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-nats-'));
    cluster = await startNatsCluster({ dir, nodes: 3 });
    database = await scratchDatabase(dir);
    admin = await connect({ servers: cluster.servers.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  }, 60_000);

  afterAll(async () => {
    await admin?.close();
    await cluster?.stop();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('NC-01: streams at 3 replicas; the stream leader killed mid-delivery: every event stored once, applied once', async () => {
    const db = database.pool;
    const topology = topologyOf('NC1');
    // The relay's sink as `flashpay start` builds it from the environment.
    const config = loadConfig({
      FLASHPAY_OUTBOX_SINK: 'nats',
      NATS_URL: cluster.nodes.map((n) => ` ${n.url} `).join(','),
      FLASHPAY_NATS_REPLICAS: '3',
    });
    const real = await createSinkFromConfig(config, { webhookUrl: '', secret: '', topology });
    // 5 s before redelivery (30 s in production): messages in flight to a dead node come back within the test.
    const consumer = await startJetStreamConsumer({
      servers: cluster.servers,
      replicas: 3,
      db,
      topology,
      ackWaitMs: 5_000,
    });
    let down: string | undefined; // the node killed and not yet restarted
    try {
      const leader = await leaderOf(topology.stream);
      const before = await info(topology.stream);
      expect(before.config.num_replicas).toBe(3);
      const copies = (c: StreamInfo['cluster']) => [c?.leader, ...(c?.replicas ?? []).map((r) => r.name)].sort();
      expect(copies(before.cluster)).toEqual(cluster.nodes.map((n) => n.name)); // a copy on each of the three
      // The durable consumer inherits the stream's replicas: its acknowledgements survive the node too.
      const durable = await (await manager()).consumers.info(topology.stream, topology.durable);
      expect(durable.cluster?.replicas ?? []).toHaveLength(2);

      await seedOrdersWithEvents(db, 'nc1', EVENTS, 'PAID');
      let publishedAtKill = -1;
      const sink = killingSink(real, 2, async () => {
        down = leader;
        const killing = cluster.node(leader).kill(); // SIGKILL goes out now, with the pass's PubAcks pending
        publishedAtKill = (await outboxRows(db, 'nc1')).filter((r) => r.published_at !== null).length;
        await killing;
      });
      const failures: unknown[] = [];
      const relay = createRelay({ db, sink, owner: 'relay-nc1', ...RELAY, onError: (e) => failures.push(e) });
      const started = Date.now();
      const first = await relay.drain();
      await drainUntilPublished(db, relay, 'nc1', 45_000);
      await sink.killed;
      const deliveredMs = Date.now() - started;

      expect(publishedAtKill).toBeGreaterThanOrEqual(0);
      expect(publishedAtKill).toBeLessThan(EVENTS); // the kill came mid-delivery…
      expect(first.failed + failures.length).toBeGreaterThan(0); // …and some publishes went unacknowledged
      const rows = await outboxRows(db, 'nc1');
      expect(rows.filter((r) => r.published_at === null || r.dead_at !== null)).toEqual([]);
      const newLeader = await leaderOf(topology.stream);
      expect(newLeader).not.toBe(leader);
      expect((await info(topology.stream)).state.messages).toBe(EVENTS); // re-publishes dropped by Msg-Id

      // Every event in the consumer's inbox (redeliveries of lost acks included), then judged. Waited
      // for in the database: with a node dead, the durable's own Raft group may still be electing a
      // leader (its info request unanswered for over 30 s, twice in ten runs here), while delivery
      // goes on. Its acknowledgements are checked once the node is back, below.
      await waitFor(
        async () =>
          (await count(
            db,
            'SELECT count(*) AS n FROM ful_inbox f JOIN outbox o ON o.event_id::text = f.event_id WHERE o.order_id LIKE $1',
            'nc1',
          )) === EVENTS,
        'the consumer to have received every event',
        60_000,
        200,
      );
      expect(
        await count(
          db,
          'SELECT count(*) AS n FROM ful_inbox f JOIN outbox o ON o.event_id::text = f.event_id WHERE o.order_id LIKE $1',
          'nc1',
        ),
      ).toBe(EVENTS);
      const effects = await effectCounts(db, 'nc1');
      expect(effects.APPLIED).toBe(EVENTS);
      expect(Object.keys(effects).filter((e) => e !== 'APPLIED' && e !== 'DUPLICATE')).toEqual([]);
      const ships = Object.values(await shipCounts(db, 'nc1'));
      expect(ships).toHaveLength(EVENTS);
      expect(everyOf(ships, (n) => n === 1)).toBe(true);
      console.info(
        `NC-01: leader ${leader} killed with ${publishedAtKill}/${EVENTS} marked published; all published in ${deliveredMs} ms; ` +
          `new leader ${newLeader}; duplicates absorbed by the inbox: ${effects.DUPLICATE ?? 0}`,
      );

      // The node comes back on its store and catches up: three current copies again.
      await cluster.node(leader).restart();
      down = undefined;
      await waitFor(
        async () => {
          const peers = (await info(topology.stream)).cluster?.replicas ?? [];
          return peers.length === 2 && everyOf(peers, (p) => p.current);
        },
        'the restarted node to be a current replica again',
        20_000,
        200,
      );
      // Every message acknowledged by the durable consumer: nothing pending, nothing awaiting an ack.
      await waitFor(
        async () => {
          const c = await (await manager()).consumers.info(topology.stream, topology.durable);
          return c.num_pending === 0 && c.num_ack_pending === 0;
        },
        'the consumer to have acknowledged everything',
        30_000,
        200,
      );
    } finally {
      await consumer.stop();
      await real.close();
      // Whatever failed above, the cluster is whole again for the tests after this one.
      if (down !== undefined) await cluster.node(down).restart();
    }
  }, 150_000);

  it('NC-02 (control): a stream at 1 replica whose node is killed: its events are not delivered', async () => {
    const db = database.pool;
    const topology = topologyOf('NC2');
    const sink = await createNatsSink({ servers: cluster.servers, topology, replicas: 1, publishTimeoutMs: 1_000 });
    const consumer = await startJetStreamConsumer({
      servers: cluster.servers,
      replicas: 1,
      db,
      topology,
      ackWaitMs: 5_000,
    });
    const only = await leaderOf(topology.stream);
    expect((await info(topology.stream)).cluster?.replicas ?? []).toEqual([]); // one copy, on `only`
    try {
      await seedOrdersWithEvents(db, 'nc2', EVENTS, 'PAID');
      const relay = (batchSize: number, backoffMs: number) =>
        createRelay({
          db,
          sink,
          owner: 'relay-nc2',
          ...RELAY,
          batchSize,
          backoffBaseMs: backoffMs,
          backoffMaxMs: backoffMs,
          onError: () => undefined,
        });
      await relay(BATCH, RELAY.backoffBaseMs).runOnce(); // the path works while the node lives
      await cluster.node(only).kill();
      // NC-01's own check, given a window longer than NC-01 needed to deliver through a leader change.
      // One pass for all the rest, backed off past the window (each drain is one pass, one PubAck
      // timeout; the check's force brings them back), so the window is what it says.
      await expect(drainUntilPublished(db, relay(EVENTS, 30_000), 'nc2', 10_000)).rejects.toThrow(/timed out/);
      const published = (await outboxRows(db, 'nc2')).filter((r) => r.published_at !== null).length;
      expect(published).toBeGreaterThan(0); // delivery did run before the kill
      expect(published).toBeLessThan(EVENTS); // NC-01's "every row ends published" fails here
      expect((await effectCounts(db, 'nc2')).APPLIED ?? 0).toBeLessThan(EVENTS);
    } finally {
      await consumer.stop();
      await sink.close();
      await cluster.node(only).restart(); // the cluster whole again for whatever runs after
    }
  }, 60_000);

  it('NC-03: an existing stream with fewer replicas than FLASHPAY_NATS_REPLICAS is raised, never lowered', async () => {
    const topology = topologyOf('NC3');
    const jsm = await manager();
    await ensureStream(jsm, { servers: cluster.servers, topology, replicas: 1 });
    expect((await info(topology.stream)).config.num_replicas).toBe(1);
    await ensureStream(jsm, { servers: cluster.servers, topology, replicas: 3 }); // a stream update moves it to 3 peers
    await waitFor(async () => ((await info(topology.stream)).cluster?.replicas ?? []).length === 2, 'three peers');
    await ensureStream(jsm, { servers: cluster.servers, topology, replicas: 1 }); // a process left at the default
    expect((await info(topology.stream)).config.num_replicas).toBe(3);
    // More copies than servers: refused, naming the setting to change.
    await expect(ensureStream(jsm, { servers: cluster.servers, topology, replicas: 5 })).rejects.toThrow(
      /FLASHPAY_NATS_REPLICAS=5/,
    );
    await jsm.streams.delete(topology.stream);
  });
});
