import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config.ts';
import { startEventPipeline } from '../../src/events/pipeline.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { brokerTest } from './broker-gate.ts';
import {
  effectCounts,
  seedOrdersWithEvents,
  startWebhookConsumer,
  TEST_SECRET,
  waitFor,
} from '../support/outbox-fixtures.ts';

// The wiring `flashpay start` uses: FLASHPAY_OUTBOX_SINK picks the sink and, for a broker, the
// consumer reading from it; with the relay loop on, a new outbox row reaches fulfillment unaided.
describe('startEventPipeline (FLASHPAY_OUTBOX_SINK)', () => {
  let db: TestDatabase;
  const suffix = randomBytes(4).toString('hex');
  const topology = {
    stream: `FLASHPAY_P_${suffix}`,
    subjectPrefix: `flashpay.p${suffix}.orders`,
    durable: `pipe-${suffix}`,
    exchange: `flashpay.pipe.${suffix}`,
    queue: `flashpay.pipe.${suffix}.fulfillment`,
  };
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  async function deliversThrough(
    sink: 'http' | 'nats' | 'amqp',
    prefix: string,
    webhookUrl = 'http://127.0.0.1:9/unused',
  ): Promise<void> {
    const config = loadConfig({ ...process.env, FLASHPAY_OUTBOX_SINK: sink, FLASHPAY_RELAY_INTERVAL_MS: '10' });
    const pipeline = await startEventPipeline(config, {
      db: db.pool,
      webhookUrl,
      secret: TEST_SECRET,
      topology,
      runRelayLoop: true,
      onError: () => undefined,
    });
    try {
      expect(pipeline.consumer === null).toBe(sink === 'http');
      await seedOrdersWithEvents(db.pool, prefix, 3, 'PAID');
      await waitFor(
        async () => (await effectCounts(db.pool, prefix)).APPLIED === 3,
        `3 events applied through ${sink}`,
      );
    } finally {
      await pipeline.stop();
    }
  }

  it('http: the relay loop posts to the webhook consumer', async () => {
    const consumer = await startWebhookConsumer(db.pool);
    try {
      await deliversThrough('http', 'ph', consumer.url);
    } finally {
      await consumer.close();
    }
  });

  brokerTest('nats: the relay publishes to JetStream and the durable consumer applies', 'NATS_URL', async (natsUrl) => {
    try {
      await deliversThrough('nats', 'pn');
    } finally {
      const admin = await connect({ servers: natsUrl });
      await (await jetstreamManager(admin)).streams.delete(topology.stream).catch(() => undefined);
      await admin.close();
    }
  });

  brokerTest('amqp: the relay publishes to RabbitMQ and the queue consumer applies', 'AMQP_URL', async (amqpUrl) => {
    try {
      await deliversThrough('amqp', 'pa');
    } finally {
      const admin = await amqp.connect(amqpUrl);
      const channel = await admin.createChannel();
      await channel.deleteQueue(topology.queue);
      await channel.deleteExchange(topology.exchange);
      await admin.close();
    }
  });
});
