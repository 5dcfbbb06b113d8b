import type { Clock } from '../platform/clock.ts';
import type { Config } from '../platform/config.ts';
import type { Db } from '../platform/db.ts';
import { startBrokerConsumerFromConfig, type RunningConsumer } from '../fulfillment/index.ts';
import {
  createRelay,
  createSinkFromConfig,
  RELAY_DEFAULTS,
  type Relay,
  type Sink,
  type SinkWiring,
  listenForWakeups,
  type WakeupListener,
} from '../outbox/index.ts';

export interface EventPipeline {
  /** For `POST /v1/admin/outbox/drain` (outboxAdmin.drainOutbox(relay)). */
  relay: Relay;
  sink: Sink;
  /** The broker-side fulfillment consumer (nats / amqp); null for http, where the webhook route is the consumer. */
  consumer: RunningConsumer | null;
  stop(): Promise<void>;
}

export interface PipelineDeps extends SinkWiring {
  db: Db;
  /** false with `--no-workers`: no relay loop; the admin drain still delivers. */
  runRelayLoop: boolean;
  /**
   * Where the relay's LISTEN connects: a direct URL when `db` is a pooler in transaction mode
   * (FLASHPAY_DIRECT_DATABASE_URL); null = no LISTEN at all, the relay polls only; default: as `db`.
   */
  listenUrl?: string | null;
  clock?: Clock;
  onError?: (error: unknown) => void;
}

/**
 * The event half of `flashpay start`: sink from FLASHPAY_OUTBOX_SINK, one relay (its loop only when
 * workers run), and for a broker sink the fulfillment consumer reading from it. The broker consumer
 * runs even with `--no-workers`: it is the consumer, not a timed loop, and without it an admin
 * drain would publish events nobody applies.
 */
export async function startEventPipeline(config: Config, deps: PipelineDeps): Promise<EventPipeline> {
  const sink = await createSinkFromConfig(config, deps);
  const relay = createRelay({ db: deps.db, sink, clock: deps.clock, ...RELAY_DEFAULTS, onError: deps.onError });
  let consumer: RunningConsumer | null;
  try {
    consumer = await startBrokerConsumerFromConfig(config, deps.db, { topology: deps.topology, onError: deps.onError });
  } catch (error) {
    await sink.close();
    throw error;
  }
  // Wake the relay on each outbox insert (migration 085); the interval is only the fallback poll.
  let listener: WakeupListener | undefined;
  if (deps.runRelayLoop) {
    if (deps.listenUrl !== null)
      listener = listenForWakeups({
        db: deps.db,
        ...(deps.listenUrl ? { url: deps.listenUrl } : {}),
        onWake: () => relay.wake(),
        onError: deps.onError,
      });
    relay.start(config.relayIntervalMs);
  }
  return {
    relay,
    sink,
    consumer,
    async stop() {
      await listener?.stop();
      await relay.stop();
      await consumer?.stop();
      await sink.close();
    },
  };
}
