import { systemClock } from '../../src/platform/clock.ts';
import { inTx } from '../../src/platform/db.ts';
import type { ConsumeFn } from '../../src/fulfillment/fulfillment.service.ts';
import { recordArrival } from '../../src/fulfillment/fulfillment.repo.ts';

/**
 * TEST ONLY — the negative control of seed 000 C29-18: a consumer with both checks removed (no
 * inbox, no version guard), so every delivery of ORDER_PAID ships again. It is a separate function
 * with its own SQL rather than a flag on `consume`, so no configuration value can reach it:
 * production wiring (`fulfillmentRoutes`, the broker consumers) uses `consume` unless a caller
 * passes a different function explicitly, and only tests import this module.
 */
export const consumeWithoutDedup: ConsumeFn = async (db, event, clock = systemClock) => {
  const now = clock.now();
  return inTx(db, async (tx) => {
    await tx.query(
      `INSERT INTO fulfillment (order_id, last_version, last_event_type, ship_count, updated_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (order_id) DO UPDATE SET
         last_version = GREATEST(fulfillment.last_version, EXCLUDED.last_version),
         ship_count = fulfillment.ship_count + EXCLUDED.ship_count, updated_at = EXCLUDED.updated_at`,
      [event.order_id, event.order_version, event.event_type, event.event_type === 'ORDER_PAID' ? 1 : 0, now],
    );
    await recordArrival(tx, event, 'APPLIED', now);
    return 'APPLIED' as const;
  });
};
