import { systemClock, type Clock } from '../platform/clock.ts';
import { inTx, type Db, type Executor, type Tx } from '../platform/db.ts';
import { literal, oneTripTx, type OutboxEvent } from '../outbox/index.ts';
import { shippedLines } from './fulfillment.event.ts';
import { recordArrival, type Effect } from './fulfillment.repo.ts';

/** Per-event outcome of a batch: an effect (an acknowledgement) or ERROR (nothing recorded; retry it). */
export type BatchOutcome = { event_id: string; effect: Effect } | { event_id: string; effect: 'ERROR'; detail: string };

// The whole of `consume` (inbox, version-guarded advance, arrival line) for many events in ONE
// statement. Every data-modifying CTE sees the same snapshot, so it is only used when the batch
// has distinct event ids and distinct order ids (a relay's batch always has: its claim takes at most
// one event per order); otherwise each event runs on its own, in order, under a savepoint.
// Inbox rows are inserted in event_id order so two overlapping batches lock in the same order.
const applySql = (eventIds: string, orderIds: string, types: string, versions: string, lines: string, now: string) => `
WITH input AS (
  SELECT * FROM unnest(${eventIds}, ${orderIds}, ${types}, ${versions}, ${lines}) WITH ORDINALITY
    AS i(event_id, order_id, event_type, version, lines, n)
), inbox AS (
  INSERT INTO ful_inbox (event_id, received_at)
  SELECT event_id, ${now} FROM input ORDER BY event_id
  ON CONFLICT DO NOTHING RETURNING event_id
), advanced AS (
  INSERT INTO fulfillment (order_id, last_version, last_event_type, ship_count, updated_at, shipped_lines)
  SELECT i.order_id, i.version, i.event_type, CASE WHEN i.event_type = 'ORDER_PAID' THEN 1 ELSE 0 END, ${now},
         NULLIF(i.lines, '')::jsonb
  FROM input i JOIN inbox USING (event_id) ORDER BY i.order_id
  ON CONFLICT (order_id) DO UPDATE SET
    last_version = EXCLUDED.last_version, last_event_type = EXCLUDED.last_event_type,
    ship_count = fulfillment.ship_count + EXCLUDED.ship_count, updated_at = EXCLUDED.updated_at,
    shipped_lines = COALESCE(EXCLUDED.shipped_lines, fulfillment.shipped_lines)
  WHERE fulfillment.last_version < EXCLUDED.last_version
  RETURNING order_id
)
INSERT INTO ful_received (event_id, order_id, event_type, version, effect, detail, at)
SELECT i.event_id, i.order_id, i.event_type, i.version,
       CASE WHEN inbox.event_id IS NULL THEN 'DUPLICATE' WHEN advanced.order_id IS NOT NULL THEN 'APPLIED' ELSE 'STALE' END,
       NULL, ${now}
FROM input i LEFT JOIN inbox USING (event_id) LEFT JOIN advanced USING (order_id)
ORDER BY i.n
RETURNING event_id, effect`;

const APPLY_SQL = applySql('$1::text[]', '$2::text[]', '$3::text[]', '$4::int[]', '$5::text[]', '$6');

/** Each event's shipped lines as JSON text, '' for none (the statement reads '' as NULL). */
const linesText = (events: readonly OutboxEvent[]): string[] =>
  events.map((e) => {
    const lines = shippedLines(e);
    return lines ? JSON.stringify(lines) : '';
  });

const TX_OPTIONS = { lockTimeoutMs: 5_000, statementTimeoutMs: 10_000 };

type Effects = Map<string, Effect>;
const effectsOf = (rows: { event_id: string; effect: Effect }[]): Effects =>
  new Map(rows.map((row) => [row.event_id, row.effect]));

/** Inside a transaction (one event under a savepoint): the statement with parameters, prepared. */
async function applySet(tx: Executor, events: readonly OutboxEvent[], now: Date): Promise<Effects> {
  const result = await tx.query<{ event_id: string; effect: Effect }>({
    name: 'fulfillment-apply-batch',
    text: APPLY_SQL,
    values: [
      events.map((e) => e.event_id),
      events.map((e) => e.order_id),
      events.map((e) => e.event_type),
      events.map((e) => e.order_version),
      linesText(events),
      now,
    ],
  });
  return effectsOf(result.rows);
}

/**
 * The common case: the statement as its own transaction in one round trip (outbox.onetrip.ts),
 * instead of BEGIN, statement, COMMIT. The commit is durable before the answer comes back.
 */
async function applySetOneTrip(db: Db, events: readonly OutboxEvent[], now: Date): Promise<Effects> {
  const sql = applySql(
    literal.texts(events.map((e) => e.event_id)),
    literal.texts(events.map((e) => e.order_id)),
    literal.texts(events.map((e) => e.event_type)),
    literal.ints(
      events.map((e) => e.order_version),
      'int',
    ),
    literal.texts(linesText(events)),
    literal.time(now),
  );
  return effectsOf((await oneTripTx<{ event_id: string; effect: Effect }>(db, sql, TX_OPTIONS)).rows);
}

function distinct(values: readonly string[]): boolean {
  return new Set(values).size === values.length;
}

/** Each event under its own savepoint, in order: a failing one is rolled back alone. */
async function applyOneByOne(tx: Tx, events: readonly OutboxEvent[], now: Date): Promise<BatchOutcome[]> {
  const outcomes: BatchOutcome[] = [];
  for (const event of events) {
    await tx.query('SAVEPOINT ful_event');
    try {
      const effect = (await applySet(tx, [event], now)).get(event.event_id);
      if (effect === undefined) throw new Error(`event ${event.event_id} produced no arrival`);
      await tx.query('RELEASE SAVEPOINT ful_event');
      outcomes.push({ event_id: event.event_id, effect });
    } catch (error) {
      await tx.query('ROLLBACK TO SAVEPOINT ful_event');
      outcomes.push({ event_id: event.event_id, effect: 'ERROR', detail: (error as Error).message });
    }
  }
  return outcomes;
}

/**
 * Applies a batch of order events in ONE transaction with the guarantees of `consume` per event:
 * inbox dedup by event_id (inside the batch and across batches), the version guard, and the arrival
 * line committed with its effect. The common case is one statement and one durable commit for the
 * whole batch. If that statement fails, the batch is applied again with a savepoint per event, so a
 * poisoned event is rolled back alone (outcome ERROR, logged after the commit like `consume` does)
 * while the rest apply. A failure of the transaction itself throws: nothing was recorded.
 */
export async function consumeBatch(
  db: Db,
  events: readonly OutboxEvent[],
  clock: Clock = systemClock,
): Promise<BatchOutcome[]> {
  if (events.length === 0) return [];
  const now = clock.now();
  const setBased = distinct(events.map((e) => e.event_id)) && distinct(events.map((e) => e.order_id));
  let outcomes: BatchOutcome[] | undefined;
  if (setBased) {
    try {
      const effects = await applySetOneTrip(db, events, now);
      outcomes = events.map((e) => ({ event_id: e.event_id, effect: effects.get(e.event_id)! }));
    } catch {
      outcomes = undefined; // find the culprit one event at a time below
    }
  }
  outcomes ??= await inTx(db, (tx) => applyOneByOne(tx, events, now), TX_OPTIONS);
  await Promise.all(
    outcomes.map((outcome, i) =>
      outcome.effect === 'ERROR'
        ? recordArrival(db, events[i]!, 'ERROR', now, outcome.detail).catch(() => undefined)
        : undefined,
    ),
  );
  return outcomes;
}
