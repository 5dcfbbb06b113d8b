import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { amqpConnector, type AmqpConnector } from '../../platform/amqp.ts';
import { sleep, type Db } from '../../platform/db.ts';
import { assertTopology, type BrokerTopology } from '../../outbox/index.ts';
import { backoffDelayMs } from '../../platform/backoff.ts';
import { registerComponent } from '../../platform/health.ts';
import { parseEvent } from '../fulfillment.event.ts';
import { consume, type ConsumeFn } from '../fulfillment.service.ts';
import type { RunningConsumer } from './running.ts';
import { consumeSpan, headerText } from './consume.trace.ts';

export interface AmqpConsumerOptions {
  /** AMQP_URL: one node, or several of a cluster; a lost connection reconnects to the next. */
  url: string;
  /** Quorum queues (FLASHPAY_AMQP_QUORUM=1, the default read from the environment). */
  quorum?: boolean;
  db: Db;
  topology: Pick<BrokerTopology, 'exchange' | 'queue'>;
  /** Tests only (C29-18); production uses `consume`. */
  consumeFn?: ConsumeFn;
  onError?: (error: unknown) => void;
}

const PREFETCH = 32; // unacked messages the broker may push ahead of processing
const RETRY_DELAY_MS = 1_000; // a failed message is requeued after this, not in a hot loop

async function handle(
  channel: Channel,
  message: ConsumeMessage,
  options: AmqpConsumerOptions,
  apply: ConsumeFn,
): Promise<void> {
  let event;
  try {
    event = parseEvent(message.content.toString('utf8'));
  } catch (error) {
    // Will never parse: rejected without requeue (to a dead-letter exchange when one is configured), loudly.
    channel.nack(message, false, false);
    options.onError?.(error);
    return;
  }
  try {
    const traceparent = headerText((message.properties.headers as Record<string, unknown> | undefined)?.traceparent);
    await consumeSpan('rabbitmq', [{ traceparent, event }], () => apply(options.db, event));
    channel.ack(message); // manual ack only after the effect committed
  } catch (error) {
    options.onError?.(error);
    await sleep(RETRY_DELAY_MS);
    channel.nack(message, false, true);
  }
}

interface Session {
  connection: ChannelModel;
  channel: Channel;
  consumerTag: string;
  chain: Promise<void>;
}

const RECONNECT_BASE_MS = 250; // first retry after a lost connection
const RECONNECT_MAX_MS = 15_000; // a broker that stays away is tried at least this often

/** One connection, channel and consumer; `onLost` fires once when the broker side goes away. */
async function openSession(
  options: AmqpConsumerOptions,
  connector: AmqpConnector,
  apply: ConsumeFn,
  onLost: (reason: string) => void,
): Promise<Session> {
  const connection = await connector.connect();
  let lost = false;
  // Until the session is up, a failure is this call's to throw, not `onLost`'s to report: a channel
  // closed by a failed declare (a classic queue whose node is down: 404) would otherwise start one
  // more reconnect loop per failed attempt, each opening connections (RC-02 ran out of descriptors).
  let established = false;
  const lose = (reason: string) => {
    if (lost) return;
    lost = true;
    if (established) onLost(reason);
  };
  connection.on('error', (error: Error) => options.onError?.(error));
  connection.on('close', () => lose('connection closed'));
  try {
    const channel = await connection.createChannel();
    channel.on('error', (error: Error) => options.onError?.(error));
    // A channel closed by the broker (a queue deleted, an ack on a stale tag) ends the session too.
    channel.on('close', () => {
      lose('channel closed');
      void connection.close().catch(() => undefined);
    });
    await assertTopology(channel, options.topology, options.quorum);
    await channel.prefetch(PREFETCH);
    const session: Session = { connection, channel, consumerTag: '', chain: Promise.resolve() };
    const { consumerTag } = await channel.consume(
      options.topology.queue,
      (message) => {
        if (message === null) return lose('consumer cancelled by the broker');
        session.chain = session.chain
          .then(() => handle(channel, message, options, apply))
          .catch((error: unknown) => options.onError?.(error));
      },
      { noAck: false },
    );
    session.consumerTag = consumerTag;
    if (lost) throw new Error('amqp consumer: the connection closed while the session was opened');
    established = true;
    return session;
  } catch (error) {
    lost = true;
    await connection.close().catch(() => undefined);
    throw error;
  }
}

/**
 * The fulfillment service reading its durable queue with manual acks. Deliveries are chained and
 * handled one at a time so an order's events are applied in queue order. A lost connection (a
 * broker restart, a connection closed by an operator) is reopened with backoff, and the
 * consumer resumes; meanwhile `flashpay_component_up{component="amqp-consumer"}` is 0 and
 * /readyz says so. Messages unacked when it was lost are redelivered; the inbox absorbs copies.
 */
export async function startAmqpConsumer(options: AmqpConsumerOptions): Promise<RunningConsumer> {
  const apply = options.consumeFn ?? consume;
  const connector = amqpConnector(options.url);
  const health = registerComponent('amqp-consumer');
  let stopped = false;
  let current: Session | undefined;
  let reconnecting: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  const reconnect = async (): Promise<void> => {
    for (let attempt = 1; !stopped; attempt++) {
      try {
        current = await openSession(options, connector, apply, onLost);
        if (stopped) await current.connection.close().catch(() => undefined);
        else health.up();
        return;
      } catch (error) {
        health.down(`reconnecting (attempt ${attempt}): ${(error as Error).message}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, backoffDelayMs(attempt, RECONNECT_BASE_MS, RECONNECT_MAX_MS));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  };
  function onLost(reason: string): void {
    if (stopped) return;
    health.down(reason);
    options.onError?.(new Error(`amqp consumer: ${reason}; reconnecting`));
    current = undefined;
    reconnecting = reconnect().finally(() => (reconnecting = undefined));
  }

  try {
    current = await openSession(options, connector, apply, onLost); // fail fast when the broker is unreachable at startup
  } catch (error) {
    health.remove();
    throw error;
  }
  return {
    async stop() {
      stopped = true;
      wake?.();
      await reconnecting;
      const session = current;
      health.remove();
      if (!session) return;
      await session.channel.cancel(session.consumerTag).catch(() => undefined);
      await session.chain;
      await session.connection.close().catch(() => undefined);
    },
  };
}
