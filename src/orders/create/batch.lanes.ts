import type { Db } from '../../platform/db.ts';
import type { KeyScope, KeyedResult } from '../../idempotency/index.ts';
import type { Principal } from '../../platform/auth.ts';
import type { RequestedLine } from './one.ts';

// The group commit's per-SKU queues (orders/create/batch.ts): who waits for the SKU's next batch or
// sold-out wave, and how many of each are running.

export interface BatchedCreate {
  principal: Principal;
  line: RequestedLine;
  scope: KeyScope;
  digest: string;
  /** The largest total the tenant's provider accepts (maxOrderAmountOf): past it, the one-buyer path's 400. */
  maxAmountMinor: number;
}

export interface Pending extends BatchedCreate {
  resolve(result: KeyedResult): void;
  reject(error: unknown): void;
}

export interface Lane {
  tenantId: string;
  sku: string;
  queue: Pending[];
  inFlight: number;
  scheduled: boolean;
  soldOut: boolean;
  refusals: Pending[];
  waveScheduled: boolean;
  wavesInFlight: number;
}

const lanesByDb = new WeakMap<Db, Map<string, Lane>>();

export function laneFor(db: Db, tenantId: string, sku: string): Lane {
  let lanes = lanesByDb.get(db);
  if (!lanes) lanesByDb.set(db, (lanes = new Map()));
  const id = `${tenantId}\u0000${sku}`;
  let lane = lanes.get(id);
  if (!lane) {
    lane = {
      tenantId,
      sku,
      queue: [],
      inFlight: 0,
      scheduled: false,
      soldOut: false,
      refusals: [],
      waveScheduled: false,
      wavesInFlight: 0,
    };
    lanes.set(id, lane);
  }
  return lane;
}

/** A lane with nothing queued, nothing running and no sold-out mark is dropped: the map holds busy and sold-out SKUs only. */
export function forgetIfIdle(db: Db, lane: Lane): void {
  const idle = lane.queue.length === 0 && lane.inFlight === 0 && !lane.scheduled && lane.refusals.length === 0;
  if (idle && !lane.soldOut && lane.wavesInFlight === 0 && !lane.waveScheduled)
    lanesByDb.get(db)?.delete(`${lane.tenantId}\u0000${lane.sku}`);
}

/** Whether the process currently routes this SKU's buyers to the sold-out waves (for tests). */
export function isMarkedSoldOut(db: Db, tenantId: string, sku: string): boolean {
  return lanesByDb.get(db)?.get(`${tenantId}\u0000${sku}`)?.soldOut ?? false;
}
