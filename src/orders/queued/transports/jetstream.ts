import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { connectNats } from '../../../platform/nats.ts';
import type { Db } from '../../../platform/db.ts';
import { receiveStockRequests, type StockRequest } from '../../../stock/index.ts';
import { receiveStockResult, STOCK_RESULT_TYPES, type StockResult } from '../results.ts';
import { ensureStream } from '../../../outbox/index.ts';
import type { StockTransport } from './transport.ts';

// Stock requests and results over JetStream: one stream, Nats-Msg-Id = request key / event id (the
// stream drops a re-publish inside its duplicate window), a durable pull consumer per direction with
// explicit acks after the inbox commit. What can never be applied (a body that does not parse, an
// unknown result type) is terminated: it stays in the stream for an operator, never acked away.

// Limits, each with its reason.
const PUBLISH_TIMEOUT_MS = 5_000; // below the claim lease, so a slow PubAck cannot outlive its claim
const ACK_WAIT_MS = 30_000; // default: an unacknowledged message is redelivered after this (at least once)
const RETRY_DELAY_MS = 500; // a failed inbox write comes back after this, not in a hot loop
const MAX_IN_FLIGHT = 64; // messages pulled ahead of processing

export interface JetStreamStockOptions {
  /** `NATS_URL`: one server or several, comma-separated. */
  servers: string;
  /** `FLASHPAY_NATS_REPLICAS`: the stock stream's replicas (raised when it has fewer). */
  replicas?: number;
  /** Subjects `<prefix>.requests|results`; the stream and durable names derive from it. */
  prefix: string;
  shopDb: Db;
  stockDb: Db;
  consume: { requests: boolean; results: boolean };
  /** Redelivery of a delivered, unacknowledged message (a consumer killed mid-batch); default 30 s. */
  ackWaitMs?: number;
  onError?: (error: unknown) => void;
}

export const stockStream = (prefix: string) => {
  const stream = prefix.replace(/[^A-Za-z0-9]/g, '_').toUpperCase();
  return {
    stream,
    requests: `${prefix}.requests`,
    results: `${prefix}.results`,
    durableRequests: `${stream}_requests`,
    durableResults: `${stream}_results`,
  };
};

type Verdict = 'ack' | 'park';

async function handle(
  message: JsMsg,
  apply: (body: Record<string, unknown>) => Promise<Verdict>,
  onError: (error: unknown) => void,
): Promise<void> {
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(message.string()) as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  try {
    const verdict = body ? await apply(body) : 'park';
    if (verdict === 'ack') message.ack();
    else {
      onError(new Error(`stock message ${message.subject}#${message.seq} parked (terminated in the stream)`));
      message.term('cannot be applied');
    }
  } catch (error) {
    onError(error);
    message.nak(RETRY_DELAY_MS);
  }
}

export function jetStreamStockTransport(options: JetStreamStockOptions): StockTransport {
  const names = stockStream(options.prefix);
  const onError = options.onError ?? ((error: unknown) => console.error('[stock jetstream]', error));
  let connection: Promise<NatsConnection> | undefined;
  let consumers: Promise<void> | undefined;
  const subscriptions: Array<{ messages: ConsumerMessages; loop: Promise<void> }> = [];

  const open = () => {
    connection ??= (async () => {
      // Reconnects forever to any server of the list, as the outbox sink does.
      const nc = await connectNats(options.servers, 'flashpay-stock');
      await ensureStream(await jetstreamManager(nc), {
        servers: options.servers,
        topology: { stream: names.stream, subjectPrefix: options.prefix },
        replicas: options.replicas,
      });
      return nc;
    })().catch((error: unknown) => {
      connection = undefined;
      throw error;
    });
    return connection;
  };

  const publish = async (subject: string, id: string, body: unknown) => {
    const js = jetstream(await open(), { timeout: PUBLISH_TIMEOUT_MS });
    await js.publish(subject, JSON.stringify(body), { msgID: id, timeout: PUBLISH_TIMEOUT_MS });
  };

  async function subscribe(
    durable: string,
    subject: string,
    apply: (body: Record<string, unknown>) => Promise<Verdict>,
  ): Promise<void> {
    const nc = await open();
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.add(names.stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: subject,
      ack_wait: nanos(options.ackWaitMs ?? ACK_WAIT_MS),
    });
    const messages = await (
      await jetstream(nc).consumers.get(names.stream, durable)
    ).consume({ max_messages: MAX_IN_FLIGHT });
    const loop = (async () => {
      for await (const message of messages) await handle(message, apply, onError);
    })();
    subscriptions.push({ messages, loop });
  }

  return {
    name: 'jetstream',
    async sendRequests(requests: readonly StockRequest[]) {
      await Promise.all(requests.map((r) => publish(names.requests, r.request_key, r)));
    },
    async sendResult(result: StockResult) {
      await publish(names.results, result.event_id, result);
    },
    async start() {
      consumers ??= (async () => {
        if (options.consume.requests) {
          await subscribe(names.durableRequests, names.requests, async (body) => {
            if (typeof body.request_key !== 'string') return 'park';
            // An unknown request type is parked in the stock inbox (listed for the operator) and acked there.
            await receiveStockRequests(options.stockDb, [body as unknown as StockRequest], new Date());
            return 'ack';
          });
        }
        if (options.consume.results) {
          await subscribe(names.durableResults, names.results, async (body) => {
            if (!(STOCK_RESULT_TYPES as readonly string[]).includes(String(body.event_type))) return 'park';
            await receiveStockResult(options.shopDb, body as unknown as StockResult, new Date());
            return 'ack';
          });
        }
      })().catch((error: unknown) => {
        consumers = undefined;
        throw error;
      });
      await consumers;
    },
    async close() {
      for (const s of subscriptions.splice(0)) {
        await s.messages.close();
        await s.loop.catch(() => undefined);
      }
      consumers = undefined;
      const nc = await connection?.catch(() => undefined);
      connection = undefined;
      if (nc && !nc.isClosed()) await nc.drain();
    },
  };
}
