import { describe, expect } from 'vitest';
import { brokerTest } from '../outbox/broker-gate.ts';
import { freshDatabase } from '../support/db.ts';
import { spawnFixture } from '../support/spawn.ts';
import { KIND, startOtlpReceiver } from './otlp-receiver.ts';

// CONTRACT.md "Traces": the broker message carries the trace onward. Each sink publishes one event
// inside a span (in a process of its own, where tracing is on), and the message the broker stored
// carries that span's traceparent in its headers.

async function published(broker: 'nats' | 'amqp'): Promise<{ sent?: string; received?: string }> {
  const child = spawnFixture(
    '../observability/broker-trace.fixture.ts',
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' },
    [broker],
  );
  const line = await child.waitFor('RESULT', 30_000);
  return JSON.parse(line.slice(line.indexOf('{'))) as { sent?: string; received?: string };
}

describe('broker headers carry the trace (issue 53)', () => {
  brokerTest(
    'TR-06: a NATS JetStream message carries the traceparent of the delivery that published it',
    'NATS_URL',
    async () => {
      const { sent, received } = await published('nats');
      expect(sent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(received).toBe(sent);
    },
  );

  brokerTest(
    'TR-07: a RabbitMQ message carries the traceparent of the delivery that published it',
    'AMQP_URL',
    async () => {
      const { sent, received } = await published('amqp');
      expect(sent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(received).toBe(sent);
    },
  );

  /** The fulfilment consumer of `broker` reading one event published inside a span: that span's traceparent, and every span exported. */
  async function consumed(broker: 'nats' | 'amqp') {
    const receiver = await startOtlpReceiver();
    const db = await freshDatabase({ poolSize: 1 });
    try {
      const child = spawnFixture(
        '../observability/consumer-trace.fixture.ts',
        {
          DATABASE_URL: db.url,
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_BSP_SCHEDULE_DELAY: '50',
        },
        [broker],
      );
      const line = await child.waitFor('RESULT', 60_000);
      const { sent } = JSON.parse(line.slice(line.indexOf('{'))) as { sent?: string };
      return { sent: sent ?? '', spans: [...receiver.spans] };
    } finally {
      await receiver.close();
      await db.drop();
    }
  }

  /** The consumer's span: a child of the span its message was published in, in the same trace. */
  async function expectContinued(broker: 'nats' | 'amqp', system: string) {
    const { sent, spans } = await consumed(broker);
    const [, traceId, publisher] = sent.split('-');
    const consumer = spans.find((s) => s.kind === KIND.CONSUMER);
    // The fixture saw the event recorded in ful_received before it printed: the span is of work done.
    expect(consumer).toMatchObject({
      traceId,
      parentSpanId: publisher,
      name: 'fulfilment consume ORDER_PAID',
      attributes: { 'messaging.system': system, 'flashpay.event_ids': ['1'] },
    });
  }

  brokerTest(
    'TR-08: the JetStream fulfilment consumer’s span continues the trace its message carries (a child of the publishing span)',
    'NATS_URL',
    () => expectContinued('nats', 'nats'),
  );

  brokerTest(
    'TR-09: the RabbitMQ fulfilment consumer’s span continues the trace its message carries (a child of the publishing span)',
    'AMQP_URL',
    () => expectContinued('amqp', 'rabbitmq'),
  );
});
