import { describe, expect } from 'vitest';
import { brokerTest } from '../outbox/broker-gate.ts';
import { spawnFixture } from '../support/spawn.ts';

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
});
