import { performance } from 'node:perf_hooks';
import { inTx, type Db } from '../src/platform/db.ts';
import { createRelay, RELAY_DEFAULTS, type OutboxEvent, type Relay, type Sink } from '../src/outbox/index.ts';
import { consumeBatch } from '../src/fulfillment/index.ts';
import type { OutboxCounts } from './options.ts';
import { checkDelivery, resetOutbox } from './outbox.seed.ts';
import { perSecond, summarize } from './stats.ts';

// The timed relay loop and the baseline loop; outbox.bench.ts runs them against each sink.

// Limits, each with its reason.
const MAX_PASSES_PER_RELAY = 100_000; // a relay's loop ends even if the outbox never empties
const MAX_FINISH_ROUNDS = 5; // forced drains for events that failed once and wait out a backoff

export interface OutboxFigures {
  events: number;
  elapsedMs: number;
  perSecond: number;
  /** A relay's pass, from its rows in hand to its mark sent (baseline: one claim → mark transaction), in ms. */
  batchP50Ms: number;
  batchP99Ms: number;
  /** One sink.deliver call (relay runs only). */
  deliverP50Ms?: number;
  deliverP99Ms?: number;
  /** Broker runs: events/s until the consumer had applied every event (relays and consumer overlap). */
  appliedPerSecond?: number;
  errors: number;
  firstError?: string;
}

export interface Errors {
  count: number;
  first?: string;
  record(error: unknown): void;
}

export function errorLog(): Errors {
  const errors: Errors = {
    count: 0,
    record(error) {
      errors.count++;
      errors.first ??= (error as Error | null)?.message ?? String(error);
    },
  };
  return errors;
}

function timedSink(sink: Sink, samplesMs: number[]): Sink {
  const timed: Sink = {
    async deliver(event) {
      const startedAt = performance.now();
      await sink.deliver(event);
      samplesMs.push(performance.now() - startedAt);
    },
    close: () => sink.close(),
  };
  const deliverBatch = sink.deliverBatch?.bind(sink);
  if (deliverBatch) {
    // One sample per batch call (one request, or one pipelined round of publishes).
    timed.deliverBatch = async (events) => {
      const startedAt = performance.now();
      const answers = await deliverBatch(events);
      samplesMs.push(performance.now() - startedAt);
      return answers;
    };
  }
  return timed;
}

/** The relay's own drain, pass by pass, so that each pass can be timed. */
async function drainTimed(relay: Relay, passSamplesMs: number[], maxPasses = MAX_PASSES_PER_RELAY): Promise<void> {
  for (let pass = 0; pass < maxPasses; pass++) {
    const startedAt = performance.now();
    const result = await relay.runOnce();
    if (result.delivered + result.failed === 0) return;
    passSamplesMs.push(performance.now() - startedAt);
  }
}

async function pendingCount(db: Db): Promise<number> {
  const result = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL AND dead_at IS NULL',
  );
  return result.rows[0]?.n ?? 0;
}

/** Runs `sinks.length` relays at once until the outbox is empty; the figures of that stretch. */
export async function deliverAll(db: Db, sinks: Sink[], batchSize: number, events: number, errors: Errors) {
  const passMs: number[] = [];
  const deliverMs: number[] = [];
  const relays = sinks.map((sink, i) =>
    createRelay({
      db,
      sink: timedSink(sink, deliverMs),
      owner: `bench-relay-${i + 1}`,
      ...RELAY_DEFAULTS,
      batchSize,
      onError: (error) => errors.record(error),
      onPass: (_result, ms) => passMs.push(ms),
    }),
  );
  const startedAt = performance.now();
  // The relay's own drain (pipelined: its next claim and its last mark overlap the delivery).
  await Promise.all(relays.map((relay) => relay.drain()));
  for (let round = 0; round < MAX_FINISH_ROUNDS && (await pendingCount(db)) > 0; round++)
    await relays[0]?.drain({ force: true });
  const elapsedMs = performance.now() - startedAt;
  const pass = summarize(passMs);
  const deliver = summarize(deliverMs);
  return {
    startedAt,
    figures: {
      events,
      elapsedMs,
      perSecond: perSecond(events, elapsedMs),
      batchP50Ms: pass.p50Ms,
      batchP99Ms: pass.p99Ms,
      deliverP50Ms: deliver.p50Ms,
      deliverP99Ms: deliver.p99Ms,
    },
  };
}

/** The baseline worker: claim a batch with SKIP LOCKED and mark it published, no delivery at all. */
async function baselineWorker(
  db: Db,
  batchSize: number,
  samplesMs: number[],
  maxPasses = MAX_PASSES_PER_RELAY,
): Promise<void> {
  for (let pass = 0; pass < maxPasses; pass++) {
    const startedAt = performance.now();
    const moved = await inTx(db, async (tx) => {
      const claimed = await tx.query<{ event_id: string }>(
        `SELECT event_id FROM outbox WHERE published_at IS NULL AND dead_at IS NULL ORDER BY event_id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [batchSize],
      );
      if (claimed.rows.length === 0) return 0;
      await tx.query('UPDATE outbox SET published_at = now() WHERE event_id = ANY($1::bigint[])', [
        claimed.rows.map((row) => row.event_id),
      ]);
      return claimed.rows.length;
    });
    if (moved === 0) return;
    samplesMs.push(performance.now() - startedAt);
  }
}

/**
 * P4's CEILING from the far side: the consumer alone. Every event is read before the clock starts
 * and cut into batches of the relays' size; `workers` loops hand them to the consumer's own batch
 * apply (consumeBatch: inbox, version guard, arrival line, one durable commit per batch), in
 * process: no outbox claim, no network, no signature, no mark. Any relay that delivers to this
 * consumer moves at most this many events/s on this machine (and less, as the relay shares its
 * cores). The events are marked published afterwards, untimed, so the run's check is a relay run's.
 */
export async function runConsumerAlone(
  db: Db,
  workers: number,
  counts: OutboxCounts,
): Promise<{ figures: OutboxFigures; check: Awaited<ReturnType<typeof checkDelivery>> }> {
  await resetOutbox(db);
  const events = (
    await db.query<OutboxEvent>(
      `SELECT event_id::text, order_id, event_type, order_version, payload FROM outbox
       WHERE published_at IS NULL AND dead_at IS NULL ORDER BY event_id`,
    )
  ).rows;
  const batches = Array.from({ length: Math.ceil(events.length / counts.batchSize) }, (_, i) =>
    events.slice(i * counts.batchSize, (i + 1) * counts.batchSize),
  );
  const batchesMs: number[] = [];
  const errors = errorLog();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < batches.length; i = next++) {
      const startedAt = performance.now();
      const outcomes = await consumeBatch(db, batches[i]!);
      const failed = outcomes.find((o) => o.effect !== 'APPLIED');
      if (failed) throw new Error(`consumer alone: event ${failed.event_id} was ${failed.effect}`);
      batchesMs.push(performance.now() - startedAt);
    }
  };
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: workers }, () => worker().catch(errors.record)));
  const elapsedMs = performance.now() - startedAt;
  await db.query(`UPDATE outbox SET published_at = now() WHERE event_id = ANY($1::bigint[])`, [
    events.map((e) => e.event_id),
  ]);
  const batch = summarize(batchesMs);
  return {
    figures: {
      events: events.length,
      elapsedMs,
      perSecond: perSecond(events.length, elapsedMs),
      batchP50Ms: batch.p50Ms,
      batchP99Ms: batch.p99Ms,
      errors: errors.count,
      ...(errors.first ? { firstError: errors.first } : {}),
    },
    check: await checkDelivery(db, counts.events, true),
  };
}

/** One baseline run: every event claimed and marked, with each batch's time. */
export interface BaselineMeasure {
  events: number;
  elapsedMs: number;
  batchesMs: number[];
  /** Events the loop left unpublished (never expected). */
  unpublished: number;
}

export async function runBaseline(db: Db, workers: number, counts: OutboxCounts): Promise<BaselineMeasure> {
  await resetOutbox(db);
  const batchesMs: number[] = [];
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: workers }, () => baselineWorker(db, counts.batchSize, batchesMs)));
  const elapsedMs = performance.now() - startedAt;
  const check = await checkDelivery(db, counts.events, false);
  return { events: counts.events, elapsedMs, batchesMs, unpublished: check.pending };
}

/** Baseline runs as one figure: the runs just before and just after a relay run share its noise. */
export function baselineFigures(measures: readonly BaselineMeasure[]): OutboxFigures {
  const events = measures.reduce((sum, m) => sum + m.events, 0);
  const elapsedMs = measures.reduce((sum, m) => sum + m.elapsedMs, 0);
  const batch = summarize(measures.flatMap((m) => m.batchesMs));
  const unpublished = measures.reduce((sum, m) => sum + m.unpublished, 0);
  const figures = {
    events,
    elapsedMs,
    perSecond: perSecond(events, elapsedMs),
    batchP50Ms: batch.p50Ms,
    batchP99Ms: batch.p99Ms,
  };
  return unpublished === 0
    ? { ...figures, errors: 0 }
    : { ...figures, errors: 1, firstError: `baseline left ${unpublished} events unpublished` };
}

/**
 * Untimed passes of both loops over `passes` batches, so that the first timed run does not pay for
 * JIT compilation, cold plans and new connections (webhook sockets, pool clients).
 */
export async function warmUp(db: Db, sink: Sink, batchSize: number, passes: number): Promise<void> {
  await resetOutbox(db);
  await baselineWorker(db, batchSize, [], passes);
  await resetOutbox(db);
  const relay = createRelay({
    db,
    sink,
    owner: 'bench-warm-up',
    ...RELAY_DEFAULTS,
    batchSize,
    onError: () => undefined,
  });
  await drainTimed(relay, [], passes);
}
