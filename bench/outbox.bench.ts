import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { sleep, type Db } from '../src/platform/db.ts';
import { startJetStreamConsumer } from '../src/fulfillment/index.ts';
import type { Sink } from '../src/outbox/index.ts';
import { createHttpSink, createNatsSink, DEFAULT_TOPOLOGY, type BrokerTopology } from '../src/outbox/index.ts';
import type { OutboxCounts } from './options.ts';
import {
  baselineFigures,
  deliverAll,
  errorLog,
  runBaseline,
  runConsumerAlone,
  warmUp,
  type Errors,
  type OutboxFigures,
} from './outbox.relays.ts';
import { checkDelivery, countApplied, resetOutbox, seedPaidOrders, type DeliveryCheck } from './outbox.seed.ts';
import { perSecond, ratio } from './stats.ts';

// Outbox delivery: N relays (createRelay, production defaults) to the real fulfillment webhook and,
// when NATS_URL is set, to JetStream with the real JetStream consumer; each against the baseline
// claim-and-mark loop with as many workers.

const HTTP_TIMEOUT_MS = 5_000; // the http sink's production default, below the 30 s lease
const APPLY_WAIT_BASE_MS = 30_000; // how long a broker consumer may lag behind the relays: a base …
const APPLY_WAIT_PER_EVENT_MS = 20; // … plus this per event (50 events/s would be pathological)
const APPLY_POLL_MS = 50;
const WARM_UP_SHARE = 10; // the untimed warm-up moves a tenth of the events

export type { OutboxFigures } from './outbox.relays.ts';

export interface OutboxRun {
  /** consumer: the consumer's batch apply alone, in process, no relay (outbox.relays.ts runConsumerAlone). */
  sink: 'http' | 'nats' | 'consumer';
  relays: number;
  flashpay: OutboxFigures;
  baseline: OutboxFigures;
  /** relays / baseline: events/s and p99 of one batch. */
  ratio: { throughput: number | null; p99: number | null };
  check: DeliveryCheck;
  ok: boolean;
}

export interface OutboxReport {
  events: number;
  batchSize: number;
  runs: OutboxRun[];
  /** e.g. "nats: skipped: no broker (NATS_URL not set)". */
  skipped: string[];
  ok: boolean;
}

export interface OutboxContext {
  /** The API's pool: the relays share it with the webhook consumer, as in `flashpay start`. */
  db: Db;
  /** The real API's POST /v1/fulfillment/events and its signing secret. */
  webhookUrl: string;
  secret: string;
  natsUrl: string | undefined;
  log: (line: string) => void;
}

interface Measured {
  figures: OutboxFigures;
  check: DeliveryCheck;
}

function withErrors(figures: Omit<OutboxFigures, 'errors'>, errors: Errors): OutboxFigures {
  return { ...figures, errors: errors.count, ...(errors.first ? { firstError: errors.first } : {}) };
}

async function runHttp(ctx: OutboxContext, relays: number, counts: OutboxCounts): Promise<Measured> {
  await resetOutbox(ctx.db);
  const errors = errorLog();
  const sinks = Array.from({ length: relays }, () =>
    createHttpSink({
      url: ctx.webhookUrl,
      batchUrl: `${ctx.webhookUrl}/batch`,
      secret: ctx.secret,
      timeoutMs: HTTP_TIMEOUT_MS,
    }),
  );
  const { figures } = await deliverAll(ctx.db, sinks, counts.batchSize, counts.events, errors);
  await Promise.all(sinks.map((sink) => sink.close()));
  return { figures: withErrors(figures, errors), check: await checkDelivery(ctx.db, counts.events, true) };
}

async function waitApplied(db: Db, events: number): Promise<boolean> {
  const deadline = Date.now() + APPLY_WAIT_BASE_MS + events * APPLY_WAIT_PER_EVENT_MS;
  while (Date.now() < deadline) {
    if ((await countApplied(db)) >= events) return true;
    await sleep(APPLY_POLL_MS);
  }
  return false;
}

async function deleteStream(servers: string, stream: string): Promise<void> {
  const connection = await connect({ servers, name: 'flashpay-bench' });
  try {
    await (await jetstreamManager(connection)).streams.delete(stream);
  } finally {
    await connection.close();
  }
}

/** A stream, subjects and durable of its own per run: event ids repeat across runs and JetStream dedupes by id. */
function benchTopology(relays: number): BrokerTopology {
  const tag = `${process.pid}_${relays}_${randomBytes(3).toString('hex')}`;
  return {
    ...DEFAULT_TOPOLOGY,
    stream: `FLASHPAY_BENCH_${tag}`,
    subjectPrefix: `flashpay.bench.${tag}`,
    durable: `flashpay-bench-${tag}`,
  };
}

async function runNats(ctx: OutboxContext, servers: string, relays: number, counts: OutboxCounts): Promise<Measured> {
  await resetOutbox(ctx.db);
  const errors = errorLog();
  const topology = benchTopology(relays);
  const consumer = await startJetStreamConsumer({
    servers,
    db: ctx.db,
    topology,
    onError: (error) => errors.record(error),
  });
  const sinks: Sink[] = [];
  try {
    for (let i = 0; i < relays; i++) sinks.push(await createNatsSink({ servers, topology }));
    const { startedAt, figures } = await deliverAll(ctx.db, sinks, counts.batchSize, counts.events, errors);
    const applied = await waitApplied(ctx.db, counts.events);
    const appliedPerSecond = applied ? perSecond(counts.events, performance.now() - startedAt) : 0;
    return {
      figures: withErrors({ ...figures, appliedPerSecond }, errors),
      check: await checkDelivery(ctx.db, counts.events, true),
    };
  } finally {
    await Promise.all(sinks.map((sink) => sink.close()));
    await consumer.stop();
    await deleteStream(servers, topology.stream).catch((error: unknown) =>
      ctx.log(`outbox: could not delete stream ${topology.stream}: ${(error as Error).message}`),
    );
  }
}

function toRun(sink: OutboxRun['sink'], relays: number, measured: Measured, baseline: OutboxFigures): OutboxRun {
  const { figures, check } = measured;
  return {
    sink,
    relays,
    flashpay: figures,
    baseline,
    ratio: {
      throughput: ratio(figures.perSecond, baseline.perSecond),
      p99: ratio(figures.batchP99Ms, baseline.batchP99Ms),
    },
    check,
    ok: check.ok && baseline.errors === 0,
  };
}

/**
 * Seeds the events once; per relay count: baseline, http, baseline, and with NATS_URL JetStream,
 * baseline. Each relay run is compared with the baseline runs right before and right after it.
 */
export async function runOutboxBench(ctx: OutboxContext, counts: OutboxCounts): Promise<OutboxReport> {
  ctx.log(`outbox: seeding ${counts.events} PAID orders with their ORDER_PAID events`);
  await seedPaidOrders(ctx.db, counts.events);
  const warmUpSink = createHttpSink({ url: ctx.webhookUrl, secret: ctx.secret, timeoutMs: HTTP_TIMEOUT_MS });
  await warmUp(ctx.db, warmUpSink, counts.batchSize, Math.ceil(counts.events / WARM_UP_SHARE / counts.batchSize));
  await warmUpSink.close();
  const runs: OutboxRun[] = [];
  for (const relays of counts.relayCounts) {
    ctx.log(
      `outbox: ${relays} relay(s), ${counts.events} events: baseline, http sink, baseline, consumer alone, baseline${ctx.natsUrl ? ', JetStream sink, baseline' : ''}`,
    );
    const before = await runBaseline(ctx.db, relays, counts);
    const http = await runHttp(ctx, relays, counts);
    const between = await runBaseline(ctx.db, relays, counts);
    runs.push(toRun('http', relays, http, baselineFigures([before, between])));
    const consumer = await runConsumerAlone(ctx.db, relays, counts);
    const afterConsumer = await runBaseline(ctx.db, relays, counts);
    runs.push(toRun('consumer', relays, consumer, baselineFigures([between, afterConsumer])));
    if (!ctx.natsUrl) continue;
    const nats = await runNats(ctx, ctx.natsUrl, relays, counts);
    const after = await runBaseline(ctx.db, relays, counts);
    runs.push(toRun('nats', relays, nats, baselineFigures([afterConsumer, after])));
  }
  runs.sort((a, b) => a.sink.localeCompare(b.sink) || a.relays - b.relays);
  const skipped = ctx.natsUrl ? [] : ['nats: skipped: no broker (NATS_URL not set)'];
  return { events: counts.events, batchSize: counts.batchSize, runs, skipped, ok: runs.every((run) => run.ok) };
}
