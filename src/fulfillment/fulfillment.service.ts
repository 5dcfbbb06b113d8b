import { systemClock, type Clock } from '../platform/clock.ts';
import { inTx, type Db, type Tx } from '../platform/db.ts';
import { invariant } from '../platform/errors.ts';
import type { OutboxEvent } from '../outbox/index.ts';
import { shippedLines } from './fulfillment.event.ts';
import { recordArrival, tryAdvance, tryRegisterInbox, type Effect } from './fulfillment.repo.ts';

/** The signature every transport (HTTP, JetStream, RabbitMQ) calls; tests may swap in a variant. */
export type ConsumeFn = (db: Db, event: OutboxEvent, clock?: Clock) => Promise<Effect>;

async function decideEffect(tx: Tx, event: OutboxEvent, now: Date): Promise<Effect> {
  if (!(await tryRegisterInbox(tx, event.event_id, now))) return 'DUPLICATE';
  const ships = event.event_type === 'ORDER_PAID' ? 1 : 0;
  const advanced = await tryAdvance(tx, {
    orderId: event.order_id,
    version: event.order_version,
    eventType: event.event_type,
    ships,
    lines: shippedLines(event),
    now,
  });
  return advanced ? 'APPLIED' : 'STALE';
}

/**
 * Applies one order event at most once, whatever the delivery count or order (seed 000 C29-09/12).
 * One transaction holds the inbox registration, the version-guarded effect and the arrival log, so
 * an effect and its APPLIED line commit together or not at all. When that transaction fails, the
 * arrival is still logged (effect ERROR, autocommit) so a rollback does not hide that it came, and
 * the error is rethrown so the transport answers 500 / nacks and the sender retries.
 */
export const consume: ConsumeFn = async (db, event, clock = systemClock) => {
  invariant(event.order_version >= 1, 'event version must be positive');
  const now = clock.now();
  try {
    return await inTx(
      db,
      async (tx) => {
        const effect = await decideEffect(tx, event, now);
        await recordArrival(tx, event, effect, now);
        return effect;
      },
      { lockTimeoutMs: 5_000, statementTimeoutMs: 10_000 },
    );
  } catch (error) {
    await recordArrival(db, event, 'ERROR', now, (error as Error).message).catch(() => undefined);
    throw error;
  }
};
