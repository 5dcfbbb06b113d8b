import type { Config } from '../../platform/config.ts';
import type { Db } from '../../platform/db.ts';
import { DEFAULT_TOPOLOGY, type BrokerTopology } from '../../outbox/index.ts';
import { startAmqpConsumer } from './amqp.consumer.ts';
import { startJetStreamConsumer } from './jetstream.consumer.ts';
import type { RunningConsumer } from './running.ts';

export { startAmqpConsumer, startJetStreamConsumer, type RunningConsumer };

/**
 * Starts the fulfillment consumer that matches `FLASHPAY_OUTBOX_SINK`: for nats / amqp a broker
 * consumer; for http none (the webhook route `fulfillmentRoutes` is the consumer), so null.
 */
export async function startBrokerConsumerFromConfig(
  config: Pick<Config, 'outboxSink' | 'natsUrl' | 'amqpUrl'> & Partial<Pick<Config, 'natsReplicas'>>,
  db: Db,
  options: { topology?: Partial<BrokerTopology>; onError?: (error: unknown) => void } = {},
): Promise<RunningConsumer | null> {
  const topology = { ...DEFAULT_TOPOLOGY, ...options.topology };
  switch (config.outboxSink) {
    case 'http':
      return null;
    case 'nats':
      if (!config.natsUrl) throw new Error('FLASHPAY_OUTBOX_SINK=nats needs NATS_URL');
      return startJetStreamConsumer({
        servers: config.natsUrl,
        replicas: config.natsReplicas,
        db,
        topology,
        onError: options.onError,
      });
    case 'amqp':
      if (!config.amqpUrl) throw new Error('FLASHPAY_OUTBOX_SINK=amqp needs AMQP_URL');
      return startAmqpConsumer({ url: config.amqpUrl, db, topology, onError: options.onError });
  }
}
