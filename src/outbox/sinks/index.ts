import type { Config } from '../../platform/config.ts';
import type { Sink } from '../outbox.events.ts';
import { createAmqpSink } from './amqp.sink.ts';
import { createHttpSink } from './http.sink.ts';
import { createNatsSink } from './nats.sink.ts';
import { DEFAULT_TOPOLOGY, type BrokerTopology } from './topology.ts';

export { createAmqpSink, createHttpSink, createNatsSink, DEFAULT_TOPOLOGY, type BrokerTopology };

export interface SinkWiring {
  /** The fulfillment webhook the http sink POSTs to (in `flashpay start`: <api>/v1/fulfillment/events). */
  webhookUrl: string;
  /** Its batch route (<api>/v1/fulfillment/events/batch); when set, a relay pass is one request. */
  batchWebhookUrl?: string;
  /** HMAC secret shared with the webhook consumer. */
  secret: string;
  /** http request timeout; default 5 s, below the default 30 s lease. */
  timeoutMs?: number;
  topology?: Partial<BrokerTopology>;
}

const DEFAULT_HTTP_TIMEOUT_MS = 5_000;

/** `FLASHPAY_OUTBOX_SINK`: http (default), nats (needs NATS_URL) or amqp (needs AMQP_URL). */
export async function createSinkFromConfig(
  config: Pick<Config, 'outboxSink' | 'natsUrl' | 'amqpUrl'> & Partial<Pick<Config, 'natsReplicas'>>,
  wiring: SinkWiring,
): Promise<Sink> {
  const topology = { ...DEFAULT_TOPOLOGY, ...wiring.topology };
  switch (config.outboxSink) {
    case 'http':
      return createHttpSink({
        url: wiring.webhookUrl,
        ...(wiring.batchWebhookUrl ? { batchUrl: wiring.batchWebhookUrl } : {}),
        secret: wiring.secret,
        timeoutMs: wiring.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS,
      });
    case 'nats':
      if (!config.natsUrl) throw new Error('FLASHPAY_OUTBOX_SINK=nats needs NATS_URL');
      return createNatsSink({ servers: config.natsUrl, topology, replicas: config.natsReplicas });
    case 'amqp':
      if (!config.amqpUrl) throw new Error('FLASHPAY_OUTBOX_SINK=amqp needs AMQP_URL');
      return createAmqpSink({ url: config.amqpUrl, topology });
  }
}
