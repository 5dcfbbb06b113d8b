import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { startAmqpConsumer, startJetStreamConsumer, type RunningConsumer } from '../../src/fulfillment/index.ts';
import { createAmqpSink } from '../../src/outbox/sinks/amqp.sink.ts';
import { createNatsSink } from '../../src/outbox/sinks/nats.sink.ts';
import { createPool } from '../../src/platform/db.ts';
import { activeTraceparent, startTracing, stopTracing, withSpan } from '../../src/platform/tracing.ts';

// In its own process (tracing registers process-wide): the fulfilment consumer of one broker reads
// an event that its sink published inside a span; prints that span's traceparent once the consumer
// has recorded the event, after the spans are exported (stopTracing flushes). TR-08/09.

const broker = process.argv[2];
const suffix = randomBytes(4).toString('hex');
const event = {
  event_id: '1',
  order_id: `o-${suffix}`,
  event_type: 'ORDER_PAID',
  order_version: 2,
  payload: { order_id: `o-${suffix}` },
};
const db = createPool(process.env.DATABASE_URL ?? '', 2, 5_000);
await startTracing();

const topology = {
  stream: `FLASHPAY_TC_${suffix}`,
  subjectPrefix: `flashpay.tc${suffix}.orders`,
  durable: `tc-${suffix}`,
  exchange: `flashpay.tc${suffix}`,
  queue: `flashpay.tc${suffix}.fulfillment`,
};

async function received(): Promise<void> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    const rows = await db.query('SELECT 1 FROM ful_received WHERE order_id = $1', [event.order_id]);
    if ((rows.rowCount ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the consumer never recorded the event');
}

let consumer: RunningConsumer | undefined;
let sent: string | undefined;
const servers = process.env.NATS_URL ?? '';
const url = process.env.AMQP_URL ?? '';
try {
  const sink =
    broker === 'nats' ? await createNatsSink({ servers, topology }) : await createAmqpSink({ url, topology });
  consumer =
    broker === 'nats'
      ? await startJetStreamConsumer({ servers, db, topology })
      : await startAmqpConsumer({ url, db, topology });
  await withSpan('test publish', {}, async () => {
    sent = activeTraceparent();
    await sink.deliver(event);
  });
  await sink.close();
  await received();
} finally {
  await consumer?.stop().catch(() => undefined);
  if (broker === 'nats') {
    const admin = await connect({ servers });
    await (await jetstreamManager(admin)).streams.delete(topology.stream).catch(() => undefined);
    await admin.close();
  } else {
    const connection = await amqp.connect(url);
    const channel = await connection.createChannel();
    await channel.deleteQueue(topology.queue).catch(() => undefined);
    await channel.deleteExchange(topology.exchange).catch(() => undefined);
    await connection.close();
  }
  await db.end();
}
await stopTracing().catch(() => undefined);
process.stdout.write(`RESULT ${JSON.stringify({ sent })}\n`);
process.exit(0);
