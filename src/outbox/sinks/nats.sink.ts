import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import type { OutboxEvent, Sink } from '../outbox.events.ts';
import { subjectFor, type BrokerTopology } from './topology.ts';

export interface NatsSinkOptions {
  servers: string;
  topology: Pick<BrokerTopology, 'stream' | 'subjectPrefix'>;
  /** The stream drops a re-published Nats-Msg-Id seen within this window (JetStream's own dedupe). */
  duplicateWindowMs?: number;
  /** How long to wait for the stream's PubAck; below the relay lease. */
  publishTimeoutMs?: number;
}

const DEFAULT_DUPLICATE_WINDOW_MS = 10 * 60_000; // longer than a relay lease plus a few retries
const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;

/** Creates the stream when missing; widens its subjects when it exists without ours. */
export async function ensureStream(jsm: JetStreamManager, options: NatsSinkOptions): Promise<void> {
  const { stream, subjectPrefix } = options.topology;
  const wanted = `${subjectPrefix}.>`;
  try {
    const info = await jsm.streams.info(stream);
    const subjects = info.config.subjects ?? [];
    if (!subjects.includes(wanted)) await jsm.streams.update(stream, { subjects: [...subjects, wanted] });
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.StreamNotFound) throw error;
    await jsm.streams.add({
      name: stream,
      subjects: [wanted],
      duplicate_window: nanos(options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS),
    });
  }
}

const toError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));

/**
 * Publishes to JetStream with `Nats-Msg-Id` = event id and resolves only on the stream's PubAck
 * (the message is stored). A PubAck marked duplicate also counts: the stream already holds it.
 */
export async function createNatsSink(options: NatsSinkOptions): Promise<Sink> {
  // Reconnect forever (the client's default gives up after 10 tries); publishes fail meanwhile
  // and the relay backs them off, so nothing is lost while the broker is away.
  const connection: NatsConnection = await connect({
    servers: options.servers,
    name: 'flashpay-relay',
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
  try {
    await ensureStream(await jetstreamManager(connection), options);
  } catch (error) {
    await connection.close();
    throw error;
  }
  const timeout = options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS;
  const js = jetstream(connection, { timeout });
  return {
    async deliver(event: OutboxEvent): Promise<void> {
      const subject = subjectFor(options.topology.subjectPrefix, event.event_type);
      await js.publish(subject, JSON.stringify(event), { msgID: event.event_id, timeout });
    },
    // Pipelined: every publish of the pass is sent before any PubAck is awaited (many acks in
    // flight on one connection); each event is acknowledged by its own PubAck, Msg-Id dedup as above.
    async deliverBatch(events: readonly OutboxEvent[]): Promise<(Error | null)[]> {
      const acks = events.map((event) =>
        js.publish(subjectFor(options.topology.subjectPrefix, event.event_type), JSON.stringify(event), {
          msgID: event.event_id,
          timeout,
        }),
      );
      const settled = await Promise.allSettled(acks);
      return settled.map((outcome) => (outcome.status === 'fulfilled' ? null : toError(outcome.reason)));
    },
    async close(): Promise<void> {
      if (!connection.isClosed()) await connection.drain();
    },
  };
}
