import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startJetStreamConsumer } from '../../src/fulfillment/consumers/jetstream.consumer.ts';
import type { Sink } from '../../src/outbox/outbox.events.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { createNatsSink } from '../../src/outbox/sinks/nats.sink.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { effectCounts, outboxRows, seedOrdersWithEvents, shipCounts, waitFor } from '../support/outbox-fixtures.ts';
import { startProxy } from '../support/tcp-proxy.ts';
import { brokerTest } from './broker-gate.ts';
import { everyOf } from '../support/every.ts';

const EVENTS = 200;

// Pipelined publishes: a pass sends all its publishes before awaiting any PubAck. The relay's
// connection to NATS is cut while a pass of 100 is in flight; whatever was stored but not acked is
// re-published with the same Nats-Msg-Id (the stream drops the copy), whatever was never sent is
// sent after the reconnect. In the end every event is in the stream once and applied once.
describe('JetStream sink, pipelined publishes', () => {
  let db: TestDatabase;
  const suffix = randomBytes(4).toString('hex');
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  brokerTest(
    'JP1 connection cut mid-pipeline: every event stored once, marked only after its ack, applied once',
    'NATS_URL',
    async (servers) => {
      const target = new URL(servers);
      const proxy = await startProxy({ host: target.hostname, port: Number(target.port) });
      const viaProxy = new URL(proxy.url(`postgres://${target.host}/x`));
      const topology = {
        stream: `FLASHPAY_P_${suffix}`,
        subjectPrefix: `flashpay.p${suffix}.orders`,
        durable: `p-${suffix}`,
      };
      const real = await createNatsSink({
        servers: `nats://${viaProxy.host}`,
        topology,
        duplicateWindowMs: 60_000,
        publishTimeoutMs: 1_000,
      });
      let cuts = 0;
      const sink: Sink = {
        deliver: (event) => real.deliver(event),
        async deliverBatch(events) {
          const answers = real.deliverBatch!(events);
          if (cuts++ === 0) {
            proxy.cut(); // the publishes are on their way; their acks are not
            setTimeout(() => proxy.restore(), 300);
          }
          return answers;
        },
        close: () => real.close(),
      };
      const consumer = await startJetStreamConsumer({ servers, db: db.pool, topology, ackWaitMs: 5_000 });
      const admin = await connect({ servers });
      try {
        await seedOrdersWithEvents(db.pool, 'jp', EVENTS, 'PAID');
        const relay = createRelay({
          db: db.pool,
          sink,
          owner: 'relay-jp',
          leaseMs: 10_000,
          batchSize: 100,
          maxAttempts: 50,
          backoffBaseMs: 10,
          onError: () => undefined,
        });
        const first = await relay.runOnce();
        expect(first.failed).toBeGreaterThan(0); // the cut hit the pipeline
        // Unmarked events are exactly the failed ones: a mark never precedes its ack.
        const afterFirst = await outboxRows(db.pool, 'jp');
        expect(afterFirst.filter((r) => r.published_at !== null)).toHaveLength(first.delivered);
        await waitFor(
          async () => {
            await relay.drain({ force: true });
            return everyOf(await outboxRows(db.pool, 'jp'), (r) => r.published_at !== null);
          },
          'every event to be published',
          20_000,
          200,
        );
        const info = await (await jetstreamManager(admin)).streams.info(topology.stream);
        expect(info.state.messages).toBe(EVENTS); // re-publishes of stored events were dropped by Msg-Id
        await waitFor(async () => ((await effectCounts(db.pool, 'jp')).APPLIED ?? 0) === EVENTS, 'all applied', 20_000);
        expect(await effectCounts(db.pool, 'jp')).toEqual({ APPLIED: EVENTS });
        expect(new Set(Object.values(await shipCounts(db.pool, 'jp')))).toEqual(new Set([1]));
      } finally {
        await consumer.stop();
        await sink.close();
        await (await jetstreamManager(admin)).streams.delete(topology.stream).catch(() => undefined);
        await admin.close();
        await proxy.close();
      }
    },
    60_000,
  );
});
