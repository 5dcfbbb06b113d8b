import { jetstreamManager, JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { createInbox, headers, nanos, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { injectTraceHeaders, tracingOn } from '../../platform/tracing.ts';
import { connectNats } from '../../platform/nats.ts';
import type { OutboxEvent, Sink } from '../outbox.events.ts';
import { subjectFor, type BrokerTopology } from './topology.ts';

export interface NatsSinkOptions {
  /** `NATS_URL`: one server or several, comma-separated. */
  servers: string;
  topology: Pick<BrokerTopology, 'stream' | 'subjectPrefix'>;
  /** The stream drops a re-published Nats-Msg-Id seen within this window (JetStream's own dedupe). */
  duplicateWindowMs?: number;
  /** How long to wait for the stream's PubAck; below the relay lease. */
  publishTimeoutMs?: number;
  /** `FLASHPAY_NATS_REPLICAS`: the stream's replicas when this creates it, and at least that many after. */
  replicas?: number;
}

const DEFAULT_DUPLICATE_WINDOW_MS = 10 * 60_000; // longer than a relay lease plus a few retries
const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;

const notFound = (error: unknown) =>
  error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;

function replicasError(stream: string, replicas: number, why: string): Error {
  return new Error(
    `stream ${stream} at ${replicas} replicas (FLASHPAY_NATS_REPLICAS=${replicas}): ${why}; ` +
      'that needs a JetStream cluster of at least as many servers (NATS_URL lists them)',
  );
}

/**
 * Creates the stream when missing; widens its subjects when it exists without ours; raises its
 * replicas when it has fewer than asked (JetStream moves a stream to more peers on an update).
 * Never lowers them: a process started without FLASHPAY_NATS_REPLICAS must not undo a cluster's 3.
 */
export async function ensureStream(jsm: JetStreamManager, options: NatsSinkOptions): Promise<void> {
  const { stream, subjectPrefix } = options.topology;
  const wanted = `${subjectPrefix}.>`;
  const replicas = options.replicas ?? 1;
  const info = await jsm.streams.info(stream).catch((error: unknown) => {
    if (notFound(error)) return undefined;
    throw error;
  });
  // A single server takes an update to 3 replicas and reports 3 while it stores one copy: only a
  // stream with cluster peers is replicated, so look at that before asking.
  if (info && replicas > 1 && !info.cluster?.name) throw replicasError(stream, replicas, 'the server is not clustered');
  try {
    if (!info) {
      await jsm.streams.add({
        name: stream,
        subjects: [wanted],
        duplicate_window: nanos(options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS),
        num_replicas: replicas,
      });
      return;
    }
    const subjects = info.config.subjects ?? [];
    const change = {
      ...(subjects.includes(wanted) ? {} : { subjects: [...subjects, wanted] }),
      ...(info.config.num_replicas < replicas ? { num_replicas: replicas } : {}),
    };
    if (Object.keys(change).length > 0) await jsm.streams.update(stream, change);
  } catch (error) {
    // "replicas > 1 not supported in non-clustered mode", "insufficient resources": say what to change.
    if (replicas > 1 && error instanceof JetStreamApiError)
      throw replicasError(stream, replicas, `JetStream refused (${error.message})`);
    throw error;
  }
}

const toError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));

/** A PubAck as the stream sends it: stored (or a duplicate of a stored one), or refused. */
function ackError(msg: Msg): Error | null {
  if (msg.data.length === 0) {
    // An empty reply is a status: 503 = no stream listens on the subject.
    const code = msg.headers?.code ?? 0;
    return new Error(code === 503 ? 'no responders: no stream captures the subject' : `PubAck status ${code}`);
  }
  let ack: { stream?: string; error?: { code?: number; description?: string } };
  try {
    ack = msg.json();
  } catch {
    return new Error('invalid PubAck (not JSON)');
  }
  if (ack.error)
    return new Error(`JetStream refused the publish: ${ack.error.code ?? ''} ${ack.error.description ?? ''}`);
  return ack.stream ? null : new Error('invalid PubAck');
}

/**
 * Pipelined JetStream publishes with one reply subscription for all of them: each publish carries
 * a reply subject `<inbox>.<n>` and its PubAck settles it; one timer bounds a whole batch. The
 * client's own js.publish is a request per message (a subscription entry, a timer and a promise
 * each), which measured as the largest cost of a pass.
 */
function ackPipeline(connection: NatsConnection) {
  const inbox = createInbox();
  const waiting = new Map<string, (error: Error | null) => void>();
  let next = 0;
  connection.subscribe(`${inbox}.*`, {
    callback: (error, msg) => {
      if (error) return; // the subscription ends with the connection; pending batches time out
      const settle = waiting.get(msg.subject.slice(inbox.length + 1));
      settle?.(ackError(msg));
    },
  });
  return function publishAll(
    messages: ReadonlyArray<{ subject: string; msgId: string; payload: string }>,
    timeoutMs: number,
  ): Promise<(Error | null)[]> {
    return new Promise((resolve) => {
      const answers: Array<Error | null | undefined> = messages.map(() => undefined);
      const tokens: string[] = [];
      let left = messages.length;
      const done = () => {
        clearTimeout(timer);
        for (const token of tokens) waiting.delete(token);
        resolve(answers.map((a) => (a === undefined ? new Error('no PubAck') : a)));
      };
      const answer = (i: number, error: Error | null) => {
        if (answers[i] !== undefined) return;
        answers[i] = error;
        if (--left === 0) done();
      };
      const timer = setTimeout(() => {
        for (let i = 0; i < answers.length; i++)
          if (answers[i] === undefined) answers[i] = new Error(`no PubAck within ${timeoutMs}ms`);
        done();
      }, timeoutMs);
      const trace = traceHeaders();
      messages.forEach((m, i) => {
        const token = String(++next);
        tokens.push(token);
        waiting.set(token, (error) => answer(i, error));
        const h = headers();
        h.set('Nats-Msg-Id', m.msgId);
        // The consumer continues the relay's trace (relay.trace.ts); nothing while tracing is off.
        if (trace) for (const [key, value] of Object.entries(trace)) h.set(key, String(value));
        try {
          connection.publish(m.subject, m.payload, { reply: `${inbox}.${token}`, headers: h });
        } catch (error) {
          answer(i, toError(error));
        }
      });
      if (messages.length === 0) done();
    });
  };
}

/**
 * Publishes to JetStream with `Nats-Msg-Id` = event id and resolves only on the stream's PubAck
 * (the message is stored). A PubAck marked duplicate also counts: the stream already holds it.
 */
export async function createNatsSink(options: NatsSinkOptions): Promise<Sink> {
  // Reconnects forever, to any server of the list; publishes fail meanwhile (no PubAck in time) and
  // the relay backs them off, so nothing is lost while a server, or the stream's leader, is away.
  const connection: NatsConnection = await connectNats(options.servers, 'flashpay-relay');
  try {
    await ensureStream(await jetstreamManager(connection), options);
  } catch (error) {
    await connection.close();
    throw error;
  }
  const timeout = options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS;
  const publishAll = ackPipeline(connection);
  const subjects = new Map<string, string>();
  const subjectOf = (eventType: string) => {
    let subject = subjects.get(eventType);
    if (subject === undefined)
      subjects.set(eventType, (subject = subjectFor(options.topology.subjectPrefix, eventType)));
    return subject;
  };
  // Pipelined: every publish of the pass is sent before any PubAck is awaited (many acks in
  // flight on one connection, written in one socket write); each event is acknowledged by its own
  // PubAck, Msg-Id dedup as above.
  const deliverBatch = (events: readonly OutboxEvent[]) =>
    publishAll(
      events.map((event) => ({
        subject: subjectOf(event.event_type),
        msgId: event.event_id,
        payload: JSON.stringify(event),
      })),
      timeout,
    );
  return {
    async deliver(event: OutboxEvent): Promise<void> {
      const [error] = await deliverBatch([event]);
      if (error) throw error;
    },
    deliverBatch,
    async close(): Promise<void> {
      if (!connection.isClosed()) await connection.drain();
    },
  };
}

/** The active trace context as message headers, or undefined while tracing is off. */
function traceHeaders(): Record<string, string | number> | undefined {
  if (!tracingOn()) return undefined;
  const carrier: Record<string, string | number> = {};
  injectTraceHeaders(carrier);
  return carrier;
}
