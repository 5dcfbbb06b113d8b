import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startAmqpConsumer } from '../../src/fulfillment/consumers/amqp.consumer.ts';
import { startJetStreamConsumer } from '../../src/fulfillment/consumers/jetstream.consumer.ts';
import type { Sink } from '../../src/outbox/outbox.events.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { createAmqpSink } from '../../src/outbox/sinks/amqp.sink.ts';
import { createNatsSink } from '../../src/outbox/sinks/nats.sink.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { brokerTest } from './broker-gate.ts';
import {
  effectCounts,
  insertEvent,
  seedOrder,
  seedOrdersWithEvents,
  shipCounts,
  waitFor,
} from '../support/outbox-fixtures.ts';

const RELAY = { leaseMs: 10_000, batchSize: 10, maxAttempts: 5, backoffBaseMs: 10 };

/** A storage fault in the consumer's effect transaction for one order, until `heal()`. */
async function breakOrder(db: TestDatabase, orderId: string): Promise<{ heal(): Promise<void> }> {
  const fn = `boom_${randomBytes(3).toString('hex')}`;
  await db.pool.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.order_id = '${orderId}' THEN RAISE EXCEPTION 'simulated storage fault'; END IF; RETURN NEW; END $$`);
  await db.pool.query(`CREATE TRIGGER ${fn} BEFORE INSERT ON fulfillment FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
  return { heal: async () => void (await db.pool.query(`DROP TRIGGER ${fn} ON fulfillment`)) };
}

/**
 * Shared scenario: 5 paid orders go outbox → relay → broker → fulfillment consumer. One order's
 * effect fails first (the consumer must not ack it; the broker redelivers it), and a copy of an
 * already-consumed event reaches the consumer again and is dropped as DUPLICATE.
 */
async function endToEnd(
  db: TestDatabase,
  prefix: string,
  sink: Sink,
  redeliverCopy: (eventJson: string) => Promise<void>,
): Promise<void> {
  const seeded = await seedOrdersWithEvents(db.pool, prefix, 4, 'PAID');
  await seedOrder(db.pool, { orderId: `${prefix}-bad`, status: 'PAID' });
  await insertEvent(db.pool, `${prefix}-bad`, 'ORDER_PAID', 4);
  const fault = await breakOrder(db, `${prefix}-bad`);

  expect(await createRelay({ db: db.pool, sink, ...RELAY }).drain()).toEqual({ delivered: 5, failed: 0 }); // stored by the broker
  await waitFor(async () => ((await effectCounts(db.pool, prefix)).ERROR ?? 0) >= 1, 'the failing effect to be tried');
  await fault.heal();
  await waitFor(async () => ((await effectCounts(db.pool, prefix)).APPLIED ?? 0) === 5, 'all five applied', 15_000);

  const first = seeded[0]!;
  await redeliverCopy(
    JSON.stringify({
      event_id: first.eventId,
      order_id: first.orderId,
      event_type: 'ORDER_PAID',
      order_version: 4,
      payload: {},
    }),
  );
  await waitFor(async () => (await effectCounts(db.pool, prefix)).DUPLICATE === 1, 'the copy to be dropped');
  expect(await effectCounts(db.pool, prefix)).toMatchObject({ APPLIED: 5, DUPLICATE: 1 });
  expect(Object.values(await shipCounts(db.pool, prefix))).toEqual([1, 1, 1, 1, 1]);
}

describe('broker sinks end to end', () => {
  let db: TestDatabase;
  const suffix = randomBytes(4).toString('hex');
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  // JetStream: the sink resolves on the stream's PubAck with Nats-Msg-Id = event id (the stream
  // drops a re-publish inside its window); the durable consumer acks only after the DB commit.
  brokerTest(
    'JetStream: relay → stream → durable consumer, each event applied once, duplicates dropped',
    'NATS_URL',
    async (servers) => {
      const topology = {
        stream: `FLASHPAY_T_${suffix}`,
        subjectPrefix: `flashpay.t${suffix}.orders`,
        durable: `ful-${suffix}`,
      };
      const admin = await connect({ servers });
      const sink = await createNatsSink({ servers, topology, duplicateWindowMs: 60_000 });
      const consumer = await startJetStreamConsumer({ servers, db: db.pool, topology, ackWaitMs: 5_000 });
      try {
        await endToEnd(db, 'js', sink, async (copy) => {
          const event = JSON.parse(copy) as { event_id: string; event_type: string };
          const js = jetstream(admin);
          // Within the window the stream itself drops a re-publish with the same Nats-Msg-Id …
          expect(
            (await js.publish(`${topology.subjectPrefix}.${event.event_type}`, copy, { msgID: event.event_id }))
              .duplicate,
          ).toBe(true);
          // … past it (simulated: no Msg-Id) the copy is stored and reaches the consumer, whose inbox drops it.
          await js.publish(`${topology.subjectPrefix}.${event.event_type}`, copy);
        });
        const info = await (await jetstreamManager(admin)).streams.info(topology.stream);
        expect(info.state.messages).toBe(6); // 5 events + the one copy sent without Msg-Id
      } finally {
        await consumer.stop();
        await sink.close();
        await (await jetstreamManager(admin)).streams.delete(topology.stream).catch(() => undefined);
        await admin.close();
      }
    },
  );

  // RabbitMQ: confirm channel, persistent messages, durable exchange and queue, messageId = event
  // id; the consumer acks manually after the DB commit. RabbitMQ has no dedupe, so the consumer's
  // inbox is what drops the second copy.
  brokerTest(
    'RabbitMQ: relay → confirmed publish → durable queue → consumer, each event applied once, duplicates dropped',
    'AMQP_URL',
    async (url) => {
      const topology = { exchange: `flashpay.test.${suffix}`, queue: `flashpay.test.${suffix}.fulfillment` };
      const sink = await createAmqpSink({ url, topology });
      const consumer = await startAmqpConsumer({ url, db: db.pool, topology });
      try {
        await endToEnd(db, 'mq', sink, async (copy) => {
          await sink.deliver(JSON.parse(copy)); // a relay re-send after a crash: confirmed again, delivered again
        });
      } finally {
        await consumer.stop();
        await sink.close();
        const admin = await amqp.connect(url);
        const channel = await admin.createChannel();
        await channel.deleteQueue(topology.queue);
        await channel.deleteExchange(topology.exchange);
        await admin.close();
      }
    },
  );
  // The JetStream sink settles each publish from its own PubAck on one reply subscription: a
  // publish no stream captures (a 503 status reply) is a failed delivery, never an ack.
  brokerTest(
    'JetStream: a publish no stream captures is a failed delivery, not an ack',
    'NATS_URL',
    async (servers) => {
      const topology = { stream: `FLASHPAY_NOSTREAM_${suffix}`, subjectPrefix: `flashpay.nostream${suffix}.orders` };
      const sink = await createNatsSink({ servers, topology, publishTimeoutMs: 2_000 });
      const admin = await connect({ servers });
      try {
        const event = {
          event_id: '778',
          order_id: 'js-nostream',
          event_type: 'ORDER_PAID',
          order_version: 4,
          payload: {},
        };
        expect(await sink.deliverBatch?.([event])).toEqual([null]);
        await (await jetstreamManager(admin)).streams.delete(topology.stream); // now nothing stores the subject
        const answers = await sink.deliverBatch?.([event, { ...event, event_id: '779' }]);
        expect(answers?.map((a) => a?.message)).toEqual([
          'no responders: no stream captures the subject',
          'no responders: no stream captures the subject',
        ]);
      } finally {
        await sink.close();
        await admin.close();
      }
    },
  );

  // A confirm alone is not enough: RabbitMQ confirms an unroutable message too. With `mandatory`
  // the broker returns it first, and the sink turns that into a failed delivery (retried, never lost).
  brokerTest('RabbitMQ: an unroutable publish is a failed delivery, not an ack', 'AMQP_URL', async (url) => {
    const topology = { exchange: `flashpay.test.${suffix}.unroutable`, queue: `flashpay.test.${suffix}.unroutable.q` };
    const sink = await createAmqpSink({ url, topology });
    const admin = await amqp.connect(url);
    const channel = await admin.createChannel();
    try {
      await channel.unbindQueue(topology.queue, topology.exchange, '#'); // now nothing routes
      const event = {
        event_id: '777',
        order_id: 'mq-unroutable',
        event_type: 'ORDER_PAID',
        order_version: 4,
        payload: {},
      };
      await expect(sink.deliver(event)).rejects.toThrow(/unroutable/);
      await channel.bindQueue(topology.queue, topology.exchange, '#');
      await sink.deliver(event);
      expect((await channel.checkQueue(topology.queue)).messageCount).toBe(1);
    } finally {
      await sink.close();
      await channel.deleteQueue(topology.queue);
      await channel.deleteExchange(topology.exchange);
      await admin.close();
    }
  });
});
