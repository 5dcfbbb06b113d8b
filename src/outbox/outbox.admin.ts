import { systemClock, type Clock } from '../platform/clock.ts';
import type { Executor } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import { listDeadEvents, redriveDead, type DeadEvent } from './outbox.repo.ts';
import type { PassResult, Relay } from './relay.ts';

const EVENT_ID = /^[1-9][0-9]{0,18}$/;
const MAX_REDRIVE_IDS = 1_000; // one re-drive request names at most this many events

/** Operator actions on the outbox, for the admin routes. */
export const outboxAdmin = {
  /**
   * `POST /v1/admin/outbox/drain` → `{delivered, failed}`: delivers every pending event now. Events
   * waiting out a backoff are made due first; each is attempted once more at most per pass, and a
   * failure backs off again, so the call ends even while a sink is down.
   */
  drainOutbox(relay: Relay): Promise<PassResult> {
    return relay.drain({ force: true });
  },

  /** Parked events, oldest first (`afterEventId` pages). */
  listDeadEvents(db: Executor, limit = 100, afterEventId = 0, tenantId?: string): Promise<DeadEvent[]> {
    return listDeadEvents(db, limit, afterEventId, tenantId);
  },

  /**
   * Puts dead events (all, or the listed ids) back in line with a fresh attempt budget; `{redriven}`.
   * With `tenantId`, only events about that tenant's orders (another tenant's ids are not counted).
   */
  async redriveDead(
    db: Executor,
    eventIds?: readonly string[],
    clock: Clock = systemClock,
    tenantId?: string,
  ): Promise<{ redriven: number }> {
    if (eventIds !== undefined) {
      if (eventIds.length > MAX_REDRIVE_IDS)
        throw new AppError('VALIDATION', `at most ${MAX_REDRIVE_IDS} event ids per re-drive`);
      const bad = eventIds.find((id) => !EVENT_ID.test(id));
      if (bad !== undefined)
        throw new AppError('VALIDATION', `event id ${JSON.stringify(bad)} is not an outbox event id`);
    }
    return { redriven: await redriveDead(db, eventIds, clock.now(), tenantId) };
  },
};

export { listDeadEvents, redriveDead };
