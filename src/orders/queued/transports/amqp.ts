import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import { amqpConnector, amqpQuorumFromEnv, declareQueue } from '../../../platform/amqp.ts';
import type { Db } from '../../../platform/db.ts';
import { receiveStockRequests, type StockRequest } from '../../../stock/index.ts';
import { receiveStockResult, STOCK_RESULT_TYPES, type StockResult } from '../results.ts';
import type { StockTransport } from './transport.ts';

// Stock requests and results over RabbitMQ: durable queues, persistent messages, publisher
// confirms, manual acks after the inbox commit, and a dead-letter queue for what can never be
// applied (an unknown type, a body that does not parse): parked there for an operator, never acked away.

// Limits, each with its reason.
const PREFETCH = 64; // unacked deliveries per consumer: enough to keep the applier's batches full
const RETRY_DELAY_MS = 500; // a delivery whose inbox write failed is requeued after this, not hot

export interface AmqpStockOptions {
  /** AMQP_URL: one node, or several of a cluster; a lost connection reconnects to the next. */
  url: string;
  /** Quorum queues (FLASHPAY_AMQP_QUORUM=1, the default read from the environment). */
  quorum?: boolean;
  /** Queues `<prefix>.requests`, `<prefix>.results`, `<prefix>.dlq` (unique per test run). */
  prefix: string;
  shopDb: Db;
  stockDb: Db;
  /** Which consumers this process runs: the stock service takes requests, a shop takes results. */
  consume: { requests: boolean; results: boolean };
  onError?: (error: unknown) => void;
}

export const stockQueues = (prefix: string) => ({
  requests: `${prefix}.requests`,
  results: `${prefix}.results`,
  dlq: `${prefix}.dlq`,
});

// Quorum (opt-in): the same three queues replicated, and a delivery limit after which the broker
// parks a message that keeps failing in the DLQ as well (platform/amqp.ts).
async function assertQueues(channel: Channel, prefix: string, quorum: boolean): Promise<void> {
  const q = stockQueues(prefix);
  await declareQueue(channel, q.dlq, { quorum });
  const deadLetter = { exchange: '', routingKey: q.dlq };
  await declareQueue(channel, q.requests, { quorum, deadLetter });
  await declareQueue(channel, q.results, { quorum, deadLetter });
}

interface Publisher {
  connection: ChannelModel;
  publisher: ConfirmChannel;
}

function publish(session: Publisher, queue: string, id: string, type: string, body: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    session.publisher.sendToQueue(
      queue,
      Buffer.from(JSON.stringify(body)),
      { persistent: true, messageId: id, type, contentType: 'application/json' },
      (error: unknown) => {
        if (!error) return resolve();
        // A nack: the channel is dropped with its connection (a channel opened during a quorum
        // queue's election may keep nacking, platform/amqp.ts); the next send opens a fresh one.
        void session.connection.close().catch(() => undefined);
        reject(new Error(`broker did not confirm ${id}: ${String(error)}`));
      },
    );
  });
}

type Handler = (message: ConsumeMessage) => Promise<'ack' | 'park'>;

/** Manual acks, one delivery at a time per consumer; a failure is requeued after a pause, a park goes to the DLQ. */
async function consumeQueue(
  channel: Channel,
  queue: string,
  handle: Handler,
  onError: (error: unknown) => void,
): Promise<void> {
  let chain: Promise<void> = Promise.resolve();
  await channel.consume(
    queue,
    (message) => {
      if (message === null) return;
      chain = chain.then(async () => {
        try {
          const verdict = await handle(message);
          if (verdict === 'ack') channel.ack(message);
          else channel.nack(message, false, false);
        } catch (error) {
          onError(error);
          await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
          channel.nack(message, false, true);
        }
      });
    },
    { noAck: false },
  );
}

export function amqpStockTransport(options: AmqpStockOptions): StockTransport {
  const q = stockQueues(options.prefix);
  const quorum = options.quorum ?? amqpQuorumFromEnv();
  const connector = amqpConnector(options.url);
  const onError = options.onError ?? ((error: unknown) => console.error('[stock amqp]', error));
  let session: Promise<{ connection: ChannelModel; publisher: ConfirmChannel }> | undefined;
  let consumers: Promise<void> | undefined;

  const open = () => {
    session ??= (async () => {
      const connection = await connector.connect();
      connection.on('error', onError);
      connection.on('close', () => {
        session = undefined;
        consumers = undefined;
      });
      try {
        const publisher = await connection.createConfirmChannel();
        await assertQueues(publisher, options.prefix, quorum);
        return { connection, publisher };
      } catch (error) {
        // A refused declaration (406: a classic queue redeclared as quorum) must not leave the connection open.
        await connection.close().catch(() => undefined);
        throw error;
      }
    })().catch((error: unknown) => {
      session = undefined;
      throw error;
    });
    return session;
  };

  const parse = (message: ConsumeMessage): Record<string, unknown> | undefined => {
    try {
      return JSON.parse(message.content.toString('utf8')) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  };

  return {
    name: 'amqp',
    async sendRequests(requests: readonly StockRequest[]) {
      const publisher = await open();
      await Promise.all(requests.map((r) => publish(publisher, q.requests, r.request_key, r.event_type, r)));
    },
    async sendResult(result: StockResult) {
      await publish(await open(), q.results, result.event_id, result.event_type, result);
    },
    async start() {
      consumers ??= (async () => {
        const { connection } = await open();
        const channel = await connection.createChannel();
        await channel.prefetch(PREFETCH);
        if (options.consume.requests) {
          await consumeQueue(
            channel,
            q.requests,
            async (message) => {
              const body = parse(message);
              if (!body || typeof body.request_key !== 'string') return 'park';
              // An unknown request type is parked in the stock inbox (visible to the operator) and acked there.
              await receiveStockRequests(options.stockDb, [body as unknown as StockRequest], new Date());
              return 'ack';
            },
            onError,
          );
        }
        if (options.consume.results) {
          await consumeQueue(
            channel,
            q.results,
            async (message) => {
              const body = parse(message);
              if (!body || !(STOCK_RESULT_TYPES as readonly string[]).includes(String(body.event_type))) {
                onError(
                  new Error(
                    `stock result ${String(message.properties.messageId)} of unknown type "${String(body?.event_type)}"; parked in ${q.dlq}`,
                  ),
                );
                return 'park';
              }
              await receiveStockResult(options.shopDb, body as unknown as StockResult, new Date());
              return 'ack';
            },
            onError,
          );
        }
      })().catch((error: unknown) => {
        consumers = undefined;
        throw error;
      });
      await consumers;
    },
    async close() {
      const open = await session?.catch(() => undefined);
      session = undefined;
      consumers = undefined;
      await open?.connection.close().catch(() => undefined);
    },
  };
}
