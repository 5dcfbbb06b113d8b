import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { createAmqpSink } from '../../src/outbox/sinks/amqp.sink.ts';
import { createNatsSink } from '../../src/outbox/sinks/nats.sink.ts';
import { activeTraceparent, startTracing, stopTracing, withSpan } from '../../src/platform/tracing.ts';

// In its own process (tracing registers process-wide): publishes one event through the NATS or
// RabbitMQ sink inside a span, reads the stored message back from the broker and prints the
// span's traceparent beside the one the message carries. Run by TR-06 (traces.brokers.test.ts).

const broker = process.argv[2];
const suffix = randomBytes(4).toString('hex');
const event = {
  event_id: '1',
  order_id: `o-${suffix}`,
  event_type: 'ORDER_PAID',
  order_version: 2,
  payload: { order_id: `o-${suffix}` },
};
await startTracing();

async function viaNats(servers: string): Promise<string | undefined> {
  const topology = {
    stream: `FLASHPAY_TR_${suffix}`,
    subjectPrefix: `flashpay.tr${suffix}.orders`,
    durable: `tr-${suffix}`,
    exchange: '',
    queue: '',
  };
  const sink = await createNatsSink({ servers, topology });
  const admin = await connect({ servers });
  const manager = await jetstreamManager(admin);
  try {
    await sink.deliver(event);
    const stored = await manager.streams.getMessage(topology.stream, { seq: 1 });
    return stored?.header?.get('traceparent');
  } finally {
    await sink.close();
    await manager.streams.delete(topology.stream).catch(() => undefined);
    await admin.close();
  }
}

async function viaAmqp(url: string): Promise<string | undefined> {
  const topology = {
    stream: '',
    subjectPrefix: '',
    durable: '',
    exchange: `flashpay.tr${suffix}`,
    queue: `flashpay.tr${suffix}.fulfillment`,
  };
  const sink = await createAmqpSink({ url, topology });
  const connection = await amqp.connect(url);
  const channel = await connection.createChannel();
  try {
    await sink.deliver(event);
    const message = await channel.get(topology.queue, { noAck: true });
    const value = message
      ? (message.properties.headers as Record<string, unknown> | undefined)?.traceparent
      : undefined;
    return typeof value === 'string' ? value : value instanceof Buffer ? value.toString() : undefined;
  } finally {
    await sink.close();
    await channel.deleteQueue(topology.queue).catch(() => undefined);
    await channel.deleteExchange(topology.exchange).catch(() => undefined);
    await connection.close();
  }
}

let sent: string | undefined;
const received = await withSpan('test publish', {}, async () => {
  sent = activeTraceparent();
  return broker === 'nats' ? viaNats(process.env.NATS_URL ?? '') : viaAmqp(process.env.AMQP_URL ?? '');
});
process.stdout.write(`RESULT ${JSON.stringify({ sent, received })}\n`);
await stopTracing().catch(() => undefined);
process.exit(0);
