import type { Channel, ChannelModel, ConfirmChannel } from 'amqplib';
import { amqpConnector, amqpQuorumFromEnv, declareQueue, type AmqpConnector } from '../../platform/amqp.ts';
import type { OutboxEvent, Sink } from '../outbox.events.ts';
import type { BrokerTopology } from './topology.ts';
import { injectTraceHeaders, tracingOn } from '../../platform/tracing.ts';

export interface AmqpSinkOptions {
  /** AMQP_URL: one node, or several of a cluster (`amqp://u:p@h1:5672,h2:5673/vhost`). */
  url: string;
  topology: Pick<BrokerTopology, 'exchange' | 'queue'>;
  /** Quorum queues (FLASHPAY_AMQP_QUORUM=1, the default read from the environment). */
  quorum?: boolean;
}

/** The dead-letter queue of the fulfillment queue (quorum only): messages past the delivery limit. */
export const deadLetterQueueOf = (queue: string): string => `${queue}.dlq`;

/**
 * Durable topic exchange plus the consumer's durable queue bound to it with `#`. The sink declares
 * the queue too, so events published before the consumer first starts are kept, not unroutable.
 * Classic (the default) exactly as before; quorum: a replicated queue whose messages go to
 * `<queue>.dlq` (also quorum) after QUORUM_DELIVERY_LIMIT deliveries or a reject.
 */
export async function assertTopology(
  channel: Channel,
  topology: AmqpSinkOptions['topology'],
  quorum = amqpQuorumFromEnv(),
): Promise<void> {
  await channel.assertExchange(topology.exchange, 'topic', { durable: true });
  if (quorum) {
    const dlq = deadLetterQueueOf(topology.queue);
    await declareQueue(channel, dlq, { quorum });
    await declareQueue(channel, topology.queue, { quorum, deadLetter: { exchange: '', routingKey: dlq } });
  } else {
    await declareQueue(channel, topology.queue, { quorum });
  }
  await channel.bindQueue(topology.queue, topology.exchange, '#');
}

interface Session {
  connection: ChannelModel;
  channel: ConfirmChannel;
  /** messageIds the broker returned as unroutable (basic.return arrives before the confirm). */
  returned: Set<string>;
}

async function openSession(
  options: AmqpSinkOptions,
  connector: AmqpConnector,
  onLost: (session: Session) => void,
): Promise<Session> {
  const connection = await connector.connect();
  const channel = await connection.createConfirmChannel();
  const session: Session = { connection, channel, returned: new Set() };
  // Errors are followed by 'close'; the next delivery opens a fresh session, pending confirms reject.
  connection.on('error', () => undefined);
  channel.on('error', () => undefined);
  connection.on('close', () => onLost(session));
  // A channel the broker closed (a queue without a leader during an election, a refused publish)
  // ends the session with its connection: left open, each such session would leak a connection.
  channel.on('close', () => {
    onLost(session);
    void connection.close().catch(() => undefined);
  });
  channel.on('return', (message) => session.returned.add(String(message.properties.messageId)));
  try {
    await assertTopology(channel, options.topology, options.quorum);
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error;
  }
  return session;
}

function publishConfirmed(session: Session, exchange: string, event: OutboxEvent): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const body = Buffer.from(JSON.stringify(event));
    // persistent: survives a broker restart; mandatory: an unroutable message is returned, not dropped.
    const options = {
      persistent: true,
      mandatory: true,
      messageId: event.event_id,
      type: event.event_type,
      contentType: 'application/json',
      // The consumer continues the relay's trace (relay.trace.ts); no headers while tracing is off.
      ...(tracingOn() ? { headers: traceHeaders() } : {}),
    };
    session.channel.publish(exchange, event.event_type, body, options, (error: unknown) => {
      if (error) {
        // A nack: the broker did not take the message. Seen on RabbitMQ 3.10 from a channel opened
        // while a quorum queue elected a new leader: it nacked every publish long after the queue
        // was back (RC-01). The session is dropped, so the next delivery opens a fresh channel.
        void session.connection.close().catch(() => undefined);
        return reject(new Error(`broker did not confirm event ${event.event_id}: ${String(error)}`));
      }
      if (session.returned.delete(event.event_id)) return reject(new Error(`event ${event.event_id} was unroutable`));
      resolve();
    });
  });
}

/**
 * Publishes on a confirm channel and resolves only on the broker's publisher confirm. A lost
 * connection is reopened by the next delivery, on the next node of a multi-host AMQP_URL.
 */
export async function createAmqpSink(options: AmqpSinkOptions): Promise<Sink> {
  const connector = amqpConnector(options.url);
  let current: Promise<Session> | undefined;
  const onLost = (lost: Session): void => {
    void current?.then((session) => {
      if (session === lost) current = undefined;
    });
  };
  const session = (): Promise<Session> => {
    current ??= openSession(options, connector, onLost).catch((error: unknown) => {
      current = undefined;
      throw error;
    });
    return current;
  };
  await session(); // fail fast when the broker is unreachable at startup
  return {
    async deliver(event: OutboxEvent): Promise<void> {
      await publishConfirmed(await session(), options.topology.exchange, event);
    },
    // Every publish of the pass goes out before any confirm is awaited (confirms in flight on one
    // channel); each event is acknowledged by its own confirm.
    async deliverBatch(events: readonly OutboxEvent[]): Promise<(Error | null)[]> {
      const open = await session();
      const settled = await Promise.allSettled(
        events.map((event) => publishConfirmed(open, options.topology.exchange, event)),
      );
      return settled.map((outcome) =>
        outcome.status === 'fulfilled'
          ? null
          : outcome.reason instanceof Error
            ? outcome.reason
            : new Error(String(outcome.reason)),
      );
    },
    async close(): Promise<void> {
      const open = await current?.catch(() => undefined);
      current = undefined;
      await open?.connection.close().catch(() => undefined);
    },
  };
}

function traceHeaders(): Record<string, string | number> {
  const carrier: Record<string, string | number> = {};
  injectTraceHeaders(carrier);
  return carrier;
}
