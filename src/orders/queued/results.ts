import { inTx, type Db, type Tx } from '../../platform/db.ts';
import {
  claimLeased,
  markLeasedPublished,
  parkLeased,
  releaseLeasedAfterFailure,
  requeueLeased,
  takeLeased,
  type LeaseClaim,
  type ParkedRow,
  type LeaseTable,
  type LeasedRow,
} from '../../platform/lease-queue.ts';
import type { OrderEvent } from '../decide/decider.ts';
import { applyOrderEvent } from '../apply/one.ts';
import { lockOrder } from '../orders.repo.ts';
import { stockRequestKey } from '../orders.stock-requests.ts';
import {
  applySkuDefinition,
  mirrorHolds,
  SKU_DEFINED,
  type GrantedHold,
  type SkuDefinition,
} from '../../stock/index.ts';

// The shop's side of the queue: its stock outbox (claimed by any shop process) and its result inbox
// (deduplicated by event id; every result applied through the decider, or recorded as a no-op).

const REQUESTS: LeaseTable = { table: 'stock_requests_out', key: 'request_key', keyType: 'text', order: 'created_at' };

export const STOCK_RESULT_TYPES = [
  'STOCK_RESERVED',
  'STOCK_REJECTED',
  'STOCK_RELEASED',
  // Split databases: acknowledgements of what the shop's mirror already did, and SKU definitions.
  'STOCK_CONFIRMED',
  'STOCK_HOLD_RELEASED',
  SKU_DEFINED,
] as const;
/** Results that never go through the decider: recorded ACKNOWLEDGED (a SKU definition also updates the replica). */
const ACKNOWLEDGEMENTS = new Set(['STOCK_CONFIRMED', 'STOCK_HOLD_RELEASED', SKU_DEFINED]);

/** A result as it travels from the stock service: `event_id` is its dedup key everywhere. */
export interface StockResult {
  event_id: string;
  order_id: string;
  event_type: string;
  payload: Record<string, unknown>;
}

export type ResultEffect = 'APPLIED' | 'IGNORED' | 'UNKNOWN_ORDER' | 'DUPLICATE' | 'ACKNOWLEDGED';

export const claimStockRequests = (db: Db, claim: LeaseClaim): Promise<LeasedRow[]> => claimLeased(db, REQUESTS, claim);
/** Requests taken and marked sent in the caller's transaction, which delivers them (one database). */
export const takeStockRequests = (tx: Tx, claim: LeaseClaim): Promise<LeasedRow[]> => takeLeased(tx, REQUESTS, claim);

/**
 * Whether the shop's side of a stock pass could do anything: a request not yet sent, or an order
 * PENDING or RELEASING long enough that its request may need sending again. A superset of what the
 * pass claims (leases and backoff aside), read from the two partial indexes in one statement, so
 * an idle pump asks this instead of running its pass.
 */
export async function shopHasStockWork(db: Db, now: Date, resendAfterMs: number): Promise<boolean> {
  const result = await db.query<{ busy: boolean }>({
    name: 'stock-shop-has-work',
    text: `SELECT EXISTS (SELECT 1 FROM stock_requests_out WHERE published_at IS NULL AND dead_at IS NULL)
               OR EXISTS (SELECT 1 FROM orders WHERE status IN ('PENDING', 'RELEASING') AND updated_at < $1) AS busy`,
    values: [new Date(now.getTime() - resendAfterMs)],
  });
  return result.rows[0]?.busy !== false;
}
export const markStockRequestsSent = (db: Db, keys: readonly string[], owner: string, now: Date) =>
  markLeasedPublished(db, REQUESTS, keys, owner, now);
export const failStockRequest = (db: Db, key: string, owner: string, error: string) =>
  releaseLeasedAfterFailure(db, REQUESTS, key, owner, error);
export const parkStockRequest = (db: Db, key: string, owner: string, error: string, now: Date) =>
  parkLeased(db, REQUESTS, key, owner, error, now);

function eventOf(result: StockResult): OrderEvent | undefined {
  switch (result.event_type) {
    case 'STOCK_RESERVED':
      return { type: 'STOCK_RESERVED' };
    case 'STOCK_REJECTED':
      return { type: 'STOCK_REJECTED', reason: String(result.payload.reason ?? 'SOLD_OUT') };
    case 'STOCK_RELEASED':
      return { type: 'STOCK_RELEASED' };
    default:
      return undefined;
  }
}

/**
 * One result, in one transaction: the inbox row (a seen event id is a DUPLICATE and changes
 * nothing) and what the decider made of it. A result for an order that already left the status
 * it answers is IGNORED, and recorded as such. An unknown type throws: the caller parks it.
 */
export async function receiveStockResult(db: Db, result: StockResult, now: Date): Promise<ResultEffect> {
  const event = eventOf(result);
  const ack = ACKNOWLEDGEMENTS.has(result.event_type);
  if (!event && !ack) throw new Error(`unknown stock result type "${result.event_type}"`);
  return inTx(db, async (tx) => {
    const fresh = await tx.query(
      `INSERT INTO stock_results_in (event_id, order_id, event_type, effect, received_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (event_id) DO NOTHING RETURNING event_id`,
      [result.event_id, result.order_id, result.event_type, ack ? 'ACKNOWLEDGED' : 'APPLIED', now],
    );
    if (fresh.rowCount === 0) return 'DUPLICATE';
    if (ack || !event) {
      if (result.event_type === SKU_DEFINED)
        await applySkuDefinition(tx, result.payload as unknown as SkuDefinition, now);
      return 'ACKNOWLEDGED';
    }
    // Split databases: the holds live in the stock service's database; the shop mirrors them
    // (under the order's lock, and only while it waits for them) so the decider sees them.
    if (event.type === 'STOCK_RESERVED' && result.payload.mirror === true) {
      const order = await lockOrder(tx, result.order_id);
      if (order?.status === 'PENDING')
        await mirrorHolds(
          tx,
          { tenantId: order.tenantId, userId: order.userId, orderId: order.orderId },
          (result.payload.holds ?? []) as GrantedHold[],
          now,
        );
    }
    const applied = await applyOrderEvent(tx, result.order_id, event, now);
    const effect: ResultEffect =
      applied.outcome === 'UNKNOWN_ORDER' ? 'UNKNOWN_ORDER' : applied.decision?.to ? 'APPLIED' : 'IGNORED';
    if (effect !== 'APPLIED') {
      await tx.query('UPDATE stock_results_in SET effect = $2, detail = $3 WHERE event_id = $1', [
        result.event_id,
        effect,
        applied.decision?.reason ?? null,
      ]);
    }
    return effect;
  });
}

/**
 * Recovery of the queue: a PENDING or RELEASING order whose request was sent more than
 * `resendAfterMs` ago and is still unanswered gets the same request (same key) again; the stock
 * service answers a duplicate with its first result. Returns how many were re-queued.
 *
 * It starts from the open orders (the partial index orders_open) and finds each one's request by
 * its key, which stockRequestKey derives from the order: the requests table keeps every request
 * ever sent, and a join from it read all of them on every pass (P7: 1,300 buffers a pass for none
 * to re-send, growing with the shop's history; docs/benchmarks/journal.md §15). Only orders that entered
 * their status before the cutoff: the request was written in that transaction, at that time, and
 * sent after it, so a request sent before the cutoff belongs to such an order; in a burst of
 * 202s the pass reads none of the new ones. (A relay whose clock is behind the shop's by d
 * re-sends d later, never twice.)
 */
export async function resendUnansweredRequests(db: Db, now: Date, resendAfterMs: number): Promise<number> {
  const stale = await db.query<{ request_key: string }>(
    `SELECT r.request_key FROM orders o CROSS JOIN LATERAL (
       SELECT r.request_key, r.published_at FROM stock_requests_out r
       WHERE r.request_key = o.order_id || CASE o.status WHEN 'PENDING' THEN $2 ELSE $3 END
         AND r.event_type = CASE o.status WHEN 'PENDING' THEN 'STOCK_DEDUCTION_REQUESTED' ELSE 'STOCK_RELEASE_REQUESTED' END
         AND r.published_at < $1 AND r.dead_at IS NULL
       OFFSET 0) r
     WHERE o.status IN ('PENDING', 'RELEASING') AND o.updated_at < $1
     ORDER BY r.published_at LIMIT 500`,
    [
      new Date(now.getTime() - resendAfterMs),
      stockRequestKey('', 'STOCK_DEDUCTION_REQUESTED'),
      stockRequestKey('', 'STOCK_RELEASE_REQUESTED'),
    ],
  );
  return requeueLeased(
    db,
    REQUESTS,
    stale.rows.map((r) => r.request_key),
  );
}

/** The shop's stock requests nobody could send (an unknown type), with the reason, for an operator. */
export async function listParkedStockRequests(db: Db): Promise<ParkedRow[]> {
  const result = await db.query<ParkedRow>(
    `SELECT 'stock_requests_out' AS side, request_key AS key, order_id, event_type, last_error AS error, dead_at AS at
     FROM stock_requests_out WHERE dead_at IS NOT NULL ORDER BY dead_at LIMIT 500`,
  );
  return result.rows;
}
