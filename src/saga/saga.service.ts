import { backoffDelayMs } from '../platform/backoff.ts';
import type { Clock } from '../platform/clock.ts';
import { inTx, type Db } from '../platform/db.ts';
import { findOrders, type Order } from '../orders/index.ts';
import type { FulfilmentClient } from './fulfilment.client.ts';
import { ORDER_FLOW } from './order.flow.ts';
import { compensationRefunds, type ProviderPayments } from './refund.seam.ts';
import { advance, type SagaStore } from './saga.runner.ts';
import { sharedTransactions } from '../platform/shared-tx.ts';
import {
  claimDueSagas,
  countSagasByState,
  finishSagaAttempts,
  journalsOf,
  startOrderSagas,
  type JournalEntry,
  type Saga,
  type SagaAttemptEnd,
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

// A round starts and claims at most this many sagas; a pass runs rounds until one finds less.
const SAGA_BATCH = 200;
// A pass ends even while a sale keeps paying (the next pass goes on): 10,000 sagas at most.
const MAX_ROUNDS = 50;
// Sagas advanced at once: each may wait on a provider's timeout.
const IN_FLIGHT = 8;
// A claim outlives a few provider round trips; a runner that died frees it soon.
const CLAIM_MS = 30_000;
// The first misses retry on the next pass; after that, exponential backoff up to five minutes.
const FREE_RETRIES = 3;
const MAX_BACKOFF_MS = 5 * 60_000;

function nextAttemptAt(now: Date, attempts: number): Date {
  if (attempts < FREE_RETRIES) return now;
  return new Date(now.getTime() + backoffDelayMs(attempts - FREE_RETRIES + 1, 1_000, MAX_BACKOFF_MS));
}

async function examine(
  deps: SagaDeps,
  store: SagaStore,
  saga: Saga,
  order: Order | undefined,
  journal: readonly JournalEntry[] | undefined,
): Promise<{ end: SagaAttemptEnd; pending?: string }> {
  let result: { state: Saga['state']; pending?: string };
  if (!order) result = { state: saga.state, pending: 'no such order' };
  else {
    const ctx = {
      order,
      now: () => deps.clock.now(),
      refunds: compensationRefunds(deps.provider, { db: deps.db, clock: deps.clock }),
      fulfilment: deps.fulfilment,
    };
    try {
      result = await advance(store, ctx.now, ORDER_FLOW, saga.sagaId, ctx, journal);
    } catch (error) {
      result = { state: saga.state, pending: `error: ${(error as Error).message}` };
    }
  }
  const now = deps.clock.now();
  const pending = result.pending !== undefined;
  const late = pending && saga.deadlineAt <= now;
  const end: SagaAttemptEnd = {
    sagaId: saga.sagaId,
    state: result.state,
    pending,
    nextAttemptAt: nextAttemptAt(now, saga.attempts + 1),
    attention: late ? `past its deadline (${saga.deadlineAt.toISOString()}): ${result.pending}` : null,
  };
  return result.pending === undefined ? { end } : { end, pending: result.pending };
}

/**
 * Advances a claimed round, IN_FLIGHT at a time (as each ends, the next starts), then ends every
 * attempt in one statement. The orders and the journals are read once for the round, under its
 * claims (no other runner writes a claimed saga's journal).
 */
async function examineRound(
  deps: SagaDeps,
  store: SagaStore,
  claimed: readonly Saga[],
  report: SagaPassReport,
): Promise<void> {
  if (claimed.length === 0) return;
  const ids = claimed.map((saga) => saga.sagaId);
  const [orders, journals] = await Promise.all([findOrders(deps.db, ids), journalsOf(deps.db, ids)]);
  const ends: SagaAttemptEnd[] = [];
  let next = 0;
  const lane = async () => {
    while (next < claimed.length) {
      const saga = claimed[next++]!;
      const { end, pending } = await examine(deps, store, saga, orders.get(saga.sagaId), journals.get(saga.sagaId));
      ends.push(end);
      if (pending !== undefined) report.pending.push({ order_id: saga.sagaId, state: end.state, reason: pending });
      else if (end.state === 'DONE') report.done++;
      else if (end.state === 'COMPENSATED') report.compensated++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, claimed.length) }, lane));
  await finishSagaAttempts(deps.db, ends, deps.clock.now());
}

/**
 * One saga pass: start the saga of every PAID order not yet fulfilled, then advance every due
 * saga — fulfil, or compensate in reverse. Safe to run repeatedly and in several processes.
 */
export async function runSagaPass(deps: SagaDeps, options: { only?: readonly string[] } = {}): Promise<SagaPassReport> {
  const report: SagaPassReport = { started: 0, examined: 0, done: 0, compensated: 0, pending: [] };
  // A saga examined in this pass is not claimed again by it: its free retries are the next passes'.
  const examined: string[] = [];
  // The sagas' journal writes (a STARTED row, a settlement with its effect) that arrive while one
  // commits share the next transaction: with IN_FLIGHT sagas at once, a burst pays fewer commits.
  const store: SagaStore = { db: deps.db, writes: sharedTransactions(deps.db) };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const now = deps.clock.now();
    const started = await startOrderSagas(
      deps.db,
      ORDER_FLOW.name,
      now,
      new Date(now.getTime() + deps.deadlineMs),
      SAGA_BATCH,
      options.only,
    );
    const claimed = await inTx(deps.db, (tx) =>
      claimDueSagas(tx, now, new Date(now.getTime() + CLAIM_MS), SAGA_BATCH, options.only, examined),
    );
    report.started += started;
    report.examined += claimed.length;
    await examineRound(deps, store, claimed, report);
    examined.push(...claimed.map((saga) => saga.sagaId));
    if (started < SAGA_BATCH && claimed.length < SAGA_BATCH) break;
  }
  sagaMetrics.pending.set((await countSagasByState(deps.db)).COMPENSATING ?? 0);
  return report;
}
