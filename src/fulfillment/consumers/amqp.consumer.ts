import amqp, { type Channel, type ConsumeMessage } from 'amqplib';
import { sleep, type Db } from '../../platform/db.ts';
import { assertTopology } from '../../outbox/index.ts';
import type { BrokerTopology } from '../../outbox/index.ts';
import { parseEvent } from '../fulfillment.event.ts';
import { consume, type ConsumeFn } from '../fulfillment.service.ts';
import type { RunningConsumer } from './running.ts';

export interface AmqpConsumerOptions {
  url: string;
  db: Db;
  topology: Pick<BrokerTopology, 'exchange' | 'queue'>;
  /** Tests only (C29-18); production uses `consume`. */
  consumeFn?: ConsumeFn;
  onError?: (error: unknown) => void;
}

const PREFETCH = 32; // unacked messages the broker may push ahead of processing
const RETRY_DELAY_MS = 1_000; // a failed message is requeued after this, not in a hot loop

async function handle(channel: Channel, message: ConsumeMessage, options: AmqpConsumerOptions, apply: ConsumeFn): Promise<void> {
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
    await apply(options.db, event);
    channel.ack(message); // manual ack only after the effect committed
  } catch (error) {
    options.onError?.(error);
    await sleep(RETRY_DELAY_MS);
    channel.nack(message, false, true);
  }
}

/**
 * The fulfillment service reading its durable queue with manual acks. Deliveries are chained and
 * handled one at a time so an order's events are applied in queue order.
 */
export async function startAmqpConsumer(options: AmqpConsumerOptions): Promise<RunningConsumer> {
  const apply = options.consumeFn ?? consume;
  const connection = await amqp.connect(options.url);
  connection.on('error', (error: Error) => options.onError?.(error));
  try {
    const channel = await connection.createChannel();
    await assertTopology(channel, options.topology);
    await channel.prefetch(PREFETCH);
    let chain: Promise<void> = Promise.resolve();
    const { consumerTag } = await channel.consume(
      options.topology.queue,
      (message) => {
        if (message === null) return; // the broker cancelled us (queue deleted)
        chain = chain.then(() => handle(channel, message, options, apply)).catch((error: unknown) => options.onError?.(error));
      },
      { noAck: false },
    );
    return {
      async stop() {
        await channel.cancel(consumerTag).catch(() => undefined);
        await chain;
        await connection.close().catch(() => undefined);
      },
    };
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error;
  }
}
