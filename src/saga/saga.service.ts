import { backoffDelayMs } from '../platform/backoff.ts';
import type { Clock } from '../platform/clock.ts';
import { inTx, type Db } from '../platform/db.ts';
import { findOrder, listUnfulfilledPaid } from '../orders/index.ts';
import type { FulfilmentClient } from './fulfilment.client.ts';
import { ORDER_FLOW } from './order.flow.ts';
import { compensationRefunds, type ProviderPayments } from './refund.seam.ts';
import { advance } from './saga.runner.ts';
import {
  claimDueSagas,
  countSagasByState,
  existingSagas,
  finishSagaAttempt,
  insertEntry,
  tryInsertSaga,
  type Saga,
} from './saga.repo.ts';
import { sagaMetrics } from './saga.metrics.ts';

export interface SagaDeps {
  db: Db;
  clock: Clock;
  provider: ProviderPayments;
  fulfilment: FulfilmentClient;
  /** After this long unfinished, a saga is listed for a person (it keeps being retried). */
  deadlineMs: number;
}

export interface SagaPassReport {
  started: number;
  examined: number;
  done: number;
  compensated: number;
  pending: Array<{ order_id: string; state: string; reason: string }>;
}

// Bounded work per pass; the next pass takes the rest.
const SAGA_BATCH = 200;
// A claim outlives a few provider round trips; a runner that died frees it soon.
const CLAIM_MS = 30_000;
// The first misses retry on the next pass; after that, exponential backoff up to five minutes.
const FREE_RETRIES = 3;
const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * Starts the after-PAID saga of an order: the saga row and the two steps pay already did (the unit
 * confirmed, the money taken), journalled DONE in one transaction — once per order.
 */
export async function startOrderSaga(deps: SagaDeps, orderId: string): Promise<boolean> {
  const order = await findOrder(deps.db, orderId);
  if (order?.status !== 'PAID') return false;
  const now = deps.clock.now();
  return inTx(deps.db, async (tx) => {
    if (!(await tryInsertSaga(tx, orderId, ORDER_FLOW.name, now, new Date(now.getTime() + deps.deadlineMs))))
      return false;
    await insertEntry(tx, orderId, {
      step: 'reserve',
      direction: 'do',
      key: order.reservationKey,
      status: 'DONE',
      receipt: `${order.quantity} × ${order.sku} confirmed`,
      error: null,
      at: now,
    });
    await insertEntry(tx, orderId, {
      step: 'charge',
      direction: 'do',
      key: orderId,
      status: 'DONE',
      receipt: `charged ${order.amount}`,
      error: null,
      at: now,
    });
    return true;
  });
}

function nextAttemptAt(now: Date, attempts: number): Date {
  if (attempts < FREE_RETRIES) return now;
  return new Date(now.getTime() + backoffDelayMs(attempts - FREE_RETRIES + 1, 1_000, MAX_BACKOFF_MS));
}

async function examine(deps: SagaDeps, saga: Saga): Promise<{ state: string; pending?: string }> {
  const order = await findOrder(deps.db, saga.sagaId);
  if (!order) return { state: saga.state, pending: 'no such order' };
  const ctx = {
    order,
    now: () => deps.clock.now(),
    refunds: compensationRefunds(deps.provider, { db: deps.db, clock: deps.clock }),
    fulfilment: deps.fulfilment,
  };
  let result: { state: Saga['state']; pending?: string };
  try {
    result = await advance(deps.db, ctx.now, ORDER_FLOW, saga.sagaId, ctx);
  } catch (error) {
    result = { state: saga.state, pending: `error: ${(error as Error).message}` };
  }
  const now = deps.clock.now();
  const late = result.pending !== undefined && saga.deadlineAt <= now;
  const attention = late ? `past its deadline (${saga.deadlineAt.toISOString()}): ${result.pending}` : null;
  await finishSagaAttempt(
    deps.db,
    saga.sagaId,
    result.state,
    result.pending !== undefined,
    nextAttemptAt(now, saga.attempts + 1),
    attention,
    now,
  );
  return result;
}

/**
 * One saga pass: start the saga of every PAID order not yet fulfilled, then advance every due
 * saga — fulfil, or compensate in reverse. Safe to run repeatedly and in several processes.
 */
export async function runSagaPass(deps: SagaDeps, options: { only?: readonly string[] } = {}): Promise<SagaPassReport> {
  let started = 0;
  const unfulfilled = (await listUnfulfilledPaid(deps.db, SAGA_BATCH)).filter(
    (id) => !options.only || options.only.includes(id),
  );
  const known = await existingSagas(deps.db, unfulfilled);
  for (const orderId of unfulfilled) {
    if (known.has(orderId)) continue;
    if (await startOrderSaga(deps, orderId)) started++;
  }
  const now = deps.clock.now();
  const claimed = await inTx(deps.db, (tx) =>
    claimDueSagas(tx, now, new Date(now.getTime() + CLAIM_MS), SAGA_BATCH, options.only),
  );
  const report: SagaPassReport = { started, examined: claimed.length, done: 0, compensated: 0, pending: [] };
  // Few at a time: each may wait on the providers' timeouts.
  for (let i = 0; i < claimed.length; i += 8) {
    const batch = claimed.slice(i, i + 8);
    const results = await Promise.all(batch.map((saga) => examine(deps, saga)));
    results.forEach((r, j) => {
      if (r.pending !== undefined)
        report.pending.push({ order_id: batch[j]?.sagaId ?? '', state: r.state, reason: r.pending });
      else if (r.state === 'DONE') report.done++;
      else if (r.state === 'COMPENSATED') report.compensated++;
    });
  }
  sagaMetrics.pending.set((await countSagasByState(deps.db)).COMPENSATING ?? 0);
  return report;
}
