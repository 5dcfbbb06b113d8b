import type { Db, Tx } from '../../platform/db.ts';
import {
  claimLeased,
  markLeasedPublished,
  parkLeased,
  releaseLeasedAfterFailure,
  takeLeased,
  type LeaseClaim,
  type ParkedRow,
  type LeasedRow,
  type LeaseTable,
} from '../../platform/lease-queue.ts';

// The stock service's queues as a pump sees them: its result outbox (claimed, marked, failed,
// parked like every lease queue), what is parked on either side for an operator, and whether a
// pass could move anything at all. stock/service/apply.ts applies the requests and writes the results.

const RESULTS: LeaseTable = { table: 'stock_outbox', key: 'event_id', keyType: 'bigint', order: 'event_id' };

/**
 * Whether the stock service's side of a pass could do anything: a request in its inbox not yet
 * applied (`inbox`), a result in its outbox not yet sent (`outbox`). One statement on the two
 * partial indexes; an idle pump asks this instead of running its pass.
 */
export async function stockServiceHasWork(db: Db, sides: { inbox: boolean; outbox: boolean }): Promise<boolean> {
  const result = await db.query<{ busy: boolean }>({
    name: 'stock-service-has-work',
    text: `SELECT ($1 AND EXISTS (SELECT 1 FROM stock_inbox WHERE applied_at IS NULL AND parked_at IS NULL))
               OR ($2 AND EXISTS (SELECT 1 FROM stock_outbox WHERE published_at IS NULL AND dead_at IS NULL)) AS busy`,
    values: [sides.inbox, sides.outbox],
  });
  return result.rows[0]?.busy !== false;
}

export const claimStockResults = (db: Db, claim: LeaseClaim): Promise<LeasedRow[]> => claimLeased(db, RESULTS, claim);
/** Results taken and marked sent in the caller's transaction, which delivers them (one database). */
export const takeStockResults = (tx: Tx, claim: LeaseClaim): Promise<LeasedRow[]> => takeLeased(tx, RESULTS, claim);
/** Marks delivered results, only those still ours (by the bigint key itself, so the primary key's index finds them). */
export const markStockResultsSent = (db: Db, keys: readonly string[], owner: string, now: Date): Promise<number> =>
  markLeasedPublished(db, RESULTS, keys, owner, now);
export const failStockResult = (db: Db, key: string, owner: string, error: string) =>
  releaseLeasedAfterFailure(db, RESULTS, key, owner, error);
export const parkStockResult = (db: Db, key: string, owner: string, error: string, now: Date) =>
  parkLeased(db, RESULTS, key, owner, error, now);

/** What an operator looks at: requests and results nobody could handle, with the reason. */
export async function listParkedStock(db: Db): Promise<ParkedRow[]> {
  const result = await db.query<ParkedRow>(
    `SELECT 'stock_inbox' AS side, request_key AS key, order_id, event_type, error, parked_at AS at FROM stock_inbox WHERE parked_at IS NOT NULL
     UNION ALL SELECT 'stock_outbox', event_id::text, order_id, event_type, last_error, dead_at FROM stock_outbox WHERE dead_at IS NOT NULL
     ORDER BY at LIMIT 500`,
  );
  return result.rows;
}
