import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startAmqpConsumer } from '../../src/fulfillment/consumers/amqp.consumer.ts';
import { startJetStreamConsumer } from '../../src/fulfillment/consumers/jetstream.consumer.ts';
import type { Sink } from '../../src/outbox/outbox.events.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { createAmqpSink } from '../../src/outbox/sinks/amqp.sink.ts';
import { createNatsSink } from '../../src/outbox/sinks/nats.sink.ts';
import { businessMetrics } from '../../src/platform/business-metrics.ts';
import { componentsDown } from '../../src/platform/health.ts';
import type { RunningConsumer } from '../../src/fulfillment/consumers/running.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { effectCounts, outboxRows, seedOrdersWithEvents, shipCounts, waitFor } from '../support/outbox-fixtures.ts';
import { startProxy, type CuttableProxy } from '../support/tcp-proxy.ts';
import { brokerTest } from '../outbox/broker-gate.ts';
import { everyOf } from '../support/every.ts';

// Many failed attempts while the broker is away must not park events as dead.
const RELAY = { leaseMs: 10_000, batchSize: 20, maxAttempts: 1_000, backoffBaseMs: 10, backoffMaxMs: 200 };

async function componentUp(name: string): Promise<number | undefined> {
  return (await businessMetrics.componentUp.get()).values.find((v) => v.labels.component === name)?.value;
}

/**
 * Shared scenario: events flow; every connection to the broker is cut (and new ones refused) while
 * more events are written; the consumer shows as down; the broker comes back; the sink and the
 * consumer reconnect by themselves and every event is applied exactly once.
 */
async function cutAndResume(
  db: TestDatabase,
  proxy: CuttableProxy,
  prefix: string,
  sink: Sink,
  component: string,
): Promise<void> {
  const relay = createRelay({ db: db.pool, sink, ...RELAY });
  await seedOrdersWithEvents(db.pool, `${prefix}a`, 10);
  expect(await relay.drain()).toEqual({ delivered: 10, failed: 0 });
  await waitFor(async () => ((await effectCounts(db.pool, `${prefix}a`)).APPLIED ?? 0) === 10, 'the first ten applied');

  proxy.cut();
  await waitFor(async () => componentsDown().some((c) => c.component === component), `${component} to show as down`);
  expect(await componentUp(component)).toBe(0);
  await seedOrdersWithEvents(db.pool, `${prefix}b`, 10);
  expect((await relay.runOnce()).delivered).toBe(0); // nothing can be published: the events wait, none is lost

  proxy.restore();
  await waitFor(
    async () => !componentsDown().some((c) => c.component === component),
    `${component} to reconnect`,
    45_000,
  );
  expect(await componentUp(component)).toBe(1);
  await waitFor(
    async () => {
      await relay.drain({ force: true });
      return everyOf(await outboxRows(db.pool, `${prefix}b`), (row) => row.published_at !== null);
    },
    'the sink to publish again',
    45_000,
  );
  await waitFor(
    async () => ((await effectCounts(db.pool, `${prefix}b`)).APPLIED ?? 0) === 10,
    'the next ten applied',
    45_000,
  );
  expect((await outboxRows(db.pool, prefix)).filter((row) => row.dead_at !== null)).toEqual([]);
  expect(
    Object.values({ ...(await shipCounts(db.pool, `${prefix}a`)), ...(await shipCounts(db.pool, `${prefix}b`)) }),
  ).toEqual(Array(20).fill(1));
}

describe('broker connections cut and restored', () => {
  let db: TestDatabase;
  const suffix = randomBytes(4).toString('hex');
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  brokerTest(
    'B-01 RabbitMQ: the consumer and the sink reconnect with backoff; each event applied once',
    'AMQP_URL',
    async (url) => {
      const target = new URL(url);
      const proxy = await startProxy({ host: target.hostname, port: Number(target.port || 5672) });
      const proxied = proxy.url(url);
      const topology = { exchange: `flashpay.t${suffix}`, queue: `flashpay.ful.t${suffix}` };
      const sink = await createAmqpSink({ url: proxied, topology });
      let consumer: RunningConsumer | undefined;
      try {
        consumer = await startAmqpConsumer({ url: proxied, db: db.pool, topology });
        await cutAndResume(db, proxy, 'rmq', sink, 'amqp-consumer');
      } finally {
        await consumer?.stop();
        await sink.close();
        await proxy.close();
        const { default: amqp } = await import('amqplib');
        const admin = await amqp.connect(url);
        const channel = await admin.createChannel();
        await channel.deleteQueue(topology.queue).catch(() => undefined);
        await channel.deleteExchange(topology.exchange).catch(() => undefined);
        await admin.close();
      }
    },
    90_000,
  );

  brokerTest(
    'B-02 JetStream: the consumer and the sink reconnect; each event applied once',
    'NATS_URL',
    async (servers) => {
      const target = new URL(servers.replace(/^nats:/, 'http:'));
      const proxy = await startProxy({ host: target.hostname, port: Number(target.port || 4222) });
      const proxied = `nats://127.0.0.1:${new URL(proxy.url('postgres://x@127.0.0.1:1/x')).port}`;
      const topology = {
        stream: `FLASHPAY_R_${suffix}`,
        subjectPrefix: `flashpay.r${suffix}.orders`,
        durable: `ful-r-${suffix}`,
      };
      const sink = await createNatsSink({ servers: proxied, topology, publishTimeoutMs: 1_000 });
      let consumer: RunningConsumer | undefined;
      try {
        consumer = await startJetStreamConsumer({ servers: proxied, db: db.pool, topology, ackWaitMs: 2_000 });
        await cutAndResume(db, proxy, 'js', sink, 'jetstream-consumer');
      } finally {
        await consumer?.stop();
        await sink.close();
        await proxy.close();
        const admin = await connect({ servers });
        await (await jetstreamManager(admin)).streams.delete(topology.stream).catch(() => undefined);
        await admin.close();
      }
    },
    90_000,
  );
});
