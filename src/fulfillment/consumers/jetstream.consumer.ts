import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { connectNats } from '../../platform/nats.ts';
import { registerComponent, type ComponentHealth } from '../../platform/health.ts';
import type { Db } from '../../platform/db.ts';
import { ensureStream } from '../../outbox/index.ts';
import type { BrokerTopology } from '../../outbox/index.ts';
import { parseEvent } from '../fulfillment.event.ts';
import { consumeBatch } from '../fulfillment.batch.ts';
import { consume, type ConsumeFn } from '../fulfillment.service.ts';
import type { RunningConsumer } from './running.ts';
import { consumeSpan } from './consume.trace.ts';

export interface JetStreamConsumerOptions {
  /** `NATS_URL`: one server or several, comma-separated. */
  servers: string;
  /** `FLASHPAY_NATS_REPLICAS`, for the stream when this side creates it (the consumer inherits the stream's). */
  replicas?: number;
  db: Db;
  topology: Pick<BrokerTopology, 'stream' | 'subjectPrefix' | 'durable'>;
  /** Unacknowledged messages are redelivered after this (at least once). */
  ackWaitMs?: number;
  /** Tests only (C29-18); production uses `consume`. */
  consumeFn?: ConsumeFn;
  onError?: (error: unknown) => void;
}

const DEFAULT_ACK_WAIT_MS = 30_000;
const RETRY_DELAY_MS = 1_000; // a failed message (database down) comes back after this, not in a hot loop
const MAX_IN_FLIGHT = 64; // messages pulled ahead of processing
const PULL_EXPIRES_MS = 5_000; // the client's default is 30 s: delivery would resume that late after a broker restart

// Messages applied at once, each in its own transaction; one order's events stay in stream order.
const MAX_CONCURRENT = 16;

type Event = ReturnType<typeof parseEvent>;

function parseOrTerminate(message: JsMsg, options: JetStreamConsumerOptions): Event | undefined {
  try {
    return parseEvent(message.string());
  } catch (error) {
    // A malformed event will never parse: terminate its delivery loudly rather than loop on it.
    message.term(`malformed event: ${(error as Error).message}`);
    options.onError?.(error);
    return undefined;
  }
}

const traceparentOf = (message: JsMsg): string | undefined => message.headers?.get('traceparent') || undefined;

async function handle(
  message: JsMsg,
  event: Event,
  options: JetStreamConsumerOptions,
  apply: ConsumeFn,
): Promise<void> {
  try {
    await consumeSpan('nats', [{ traceparent: traceparentOf(message), event }], () => apply(options.db, event));
    message.ack(); // only after the effect committed; a lost ack means a redelivery, absorbed as DUPLICATE
  } catch (error) {
    message.nak(RETRY_DELAY_MS);
    options.onError?.(error);
  }
}

/**
 * Applies messages concurrently (bounded) while keeping each order's events in stream order: a
 * message waits for the previous one of its order. Across orders any interleaving is safe; the
 * consumer's inbox and version guard make each effect idempotent and monotonic anyway.
 */
function orderedPool(options: JetStreamConsumerOptions, apply: ConsumeFn) {
  const tails = new Map<string, Promise<void>>();
  const running = new Set<Promise<void>>();
  return {
    async submit(message: JsMsg): Promise<void> {
      const event = parseOrTerminate(message, options);
      if (!event) return;
      while (running.size >= MAX_CONCURRENT) await Promise.race(running);
      const previous = tails.get(event.order_id) ?? Promise.resolve();
      const task: Promise<void> = previous
        .then(() => handle(message, event, options, apply))
        .catch((error: unknown) => options.onError?.(error)) // an ack on a closed connection: redelivered later
        .finally(() => {
          running.delete(task);
          if (tails.get(event.order_id) === task) tails.delete(event.order_id);
        });
      tails.set(event.order_id, task);
      running.add(task);
    },
    async idle(): Promise<void> {
      await Promise.all(running);
    },
  };
}

// Messages applied in one transaction (consumeBatch); all that were pulled ahead, at most.
const MAX_BATCH = MAX_IN_FLIGHT;

/**
 * The production path: messages queue while a batch is being applied, and the next batch takes
 * everything queued, in stream order, as ONE transaction (consumeBatch: inbox, version guard and
 * arrival line per event; a failing event is rolled back alone). One batch at a time, so each
 * order's events are applied in stream order. Each message is acked after the commit, or nak'ed
 * (redelivered) when its own outcome, or the whole transaction, failed.
 */
function batchedPool(options: JetStreamConsumerOptions) {
  const queue: { message: JsMsg; event: Event }[] = [];
  let running: Promise<void> | undefined;

  async function settle(batch: { message: JsMsg; event: Event }[]): Promise<void> {
    try {
      const outcomes = await consumeSpan(
        'nats',
        batch.map(({ message, event }) => ({ traceparent: traceparentOf(message), event })),
        () =>
          consumeBatch(
            options.db,
            batch.map((entry) => entry.event),
          ),
      );
      outcomes.forEach((outcome, i) => {
        const { message } = batch[i]!;
        if (outcome.effect !== 'ERROR') return message.ack(); // after the commit
        message.nak(RETRY_DELAY_MS);
        options.onError?.(new Error(`event ${outcome.event_id} not applied: ${outcome.detail}`));
      });
    } catch (error) {
      for (const { message } of batch) message.nak(RETRY_DELAY_MS);
      options.onError?.(error);
    }
  }

  function kick(): void {
    if (running || queue.length === 0) return;
    running = (async () => {
      while (queue.length > 0) await settle(queue.splice(0, MAX_BATCH));
    })()
      .catch((error: unknown) => options.onError?.(error)) // an ack on a closed connection: redelivered later
      .finally(() => {
        running = undefined;
        kick();
      });
  }

  return {
    async submit(message: JsMsg): Promise<void> {
      const event = parseOrTerminate(message, options);
      if (!event) return;
      queue.push({ message, event });
      kick();
      while (queue.length >= MAX_BATCH && running) await running; // back-pressure on the pull loop
    },
    async idle(): Promise<void> {
      while (running) await running;
    },
  };
}

/** Mirrors the connection's state into the component's health (metric and /readyz). */
async function watchConnection(
  connection: NatsConnection,
  health: ComponentHealth,
  onError?: (error: unknown) => void,
): Promise<void> {
  for await (const status of connection.status()) {
    if (status.type === 'disconnect') {
      health.down('disconnected; reconnecting');
      onError?.(new Error('jetstream consumer: disconnected; reconnecting'));
    } else if (status.type === 'reconnect') health.up();
  }
}

/**
 * The fulfillment service reading the order stream through a durable pull consumer with explicit
 * acks, applying messages concurrently but each order's in stream order.
 */
export async function startJetStreamConsumer(options: JetStreamConsumerOptions): Promise<RunningConsumer> {
  const apply = options.consumeFn ?? consume;
  const { stream, subjectPrefix, durable } = options.topology;
  // Reconnects forever, to any server of the list: a broker back after a long outage, or the
  // cluster's next server when one dies, must find its consumer again.
  const connection = await connectNats(options.servers, 'flashpay-fulfillment');
  const health = registerComponent('jetstream-consumer');
  void watchConnection(connection, health, options.onError);
  try {
    const jsm = await jetstreamManager(connection);
    // Either side may start first.
    await ensureStream(jsm, { servers: options.servers, topology: options.topology, replicas: options.replicas });
    await jsm.consumers.add(stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `${subjectPrefix}.>`,
      ack_wait: nanos(options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
    });
    const consumer = await jetstream(connection).consumers.get(stream, durable);
    // Pull requests expire every PULL_EXPIRES_MS: after a reconnect a fresh pull is never far off.
    const messages = await consumer.consume({ max_messages: MAX_IN_FLIGHT, expires: PULL_EXPIRES_MS });
    // A test's consumeFn (the C29-18 negative control) goes through the one-message-per-transaction pool.
    const pool = options.consumeFn ? orderedPool(options, apply) : batchedPool(options);
    const loop = (async () => {
      for await (const message of messages) await pool.submit(message);
      await pool.idle();
    })();
    return {
      async stop() {
        health.remove();
        await messages.close();
        await loop;
        if (!connection.isClosed()) await connection.drain();
      },
    };
  } catch (error) {
    health.remove();
    await connection.close();
    throw error;
  }
}
