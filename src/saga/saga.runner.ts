import type { Db, Tx } from '../platform/db.ts';
import type { SharedTransactions } from '../platform/shared-tx.ts';
import { faultPoint, type FaultPointName } from '../platform/faultpoints.ts';
import {
  insertEntry,
  journalOf,
  trySettleEntry,
  type Direction,
  type JournalEntry,
  type SagaState,
} from './saga.repo.ts';

// A small persisted saga runner — what seed 002's flows need, not a workflow engine. A flow is an
// ordered list of steps, each with its own fixed key for the forward action and for its undo.
// Forward: each step once (a DONE row is never redone). A step refused for good turns the saga
// around: the completed steps are undone in strict reverse order of their DONE rows, stopping at
// the first undo that cannot complete. External actions run in atomic phases (rocket-rides,
// STYLE 7): a STARTED row is committed before the call, the answer is settled afterwards in the
// same transaction as the step's local effect; a STARTED or UNKNOWN attempt is resolved by a
// query before anything else happens (Temporal's "activity outcome unknown" rule).

export type StepResult =
  { status: 'DONE' | 'REFUSED'; receipt?: string } | { status: 'FAILED' | 'UNKNOWN'; error: string };

export interface Action<C> {
  key(sagaId: string, ctx: C): string;
  /** The external call (absent: a local step, applied only by `apply`). */
  call?(ctx: C, key: string): Promise<StepResult>;
  /** What the other side says happened under `key` (undefined: nothing yet). */
  query?(ctx: C, key: string): Promise<StepResult | undefined>;
  /** The local effect, in the transaction that settles the journal row. */
  apply?(tx: Tx, ctx: C, result: StepResult): Promise<void>;
  /** Armed by crash tests: right after the external call, before its answer is journalled. */
  afterCall?: FaultPointName;
}

export interface Step<C> {
  name: string;
  forward: Action<C>;
  undo?: Action<C>;
}

export interface Flow<C> {
  name: string;
  steps: readonly Step<C>[];
  /** Armed by crash tests: between two undos. */
  betweenUndos?: FaultPointName;
}

/**
 * Where the runner reads (`db`) and writes: each write is a transaction of its own, or shares one
 * with other sagas' writes that arrive meanwhile (sharedTransactions); either way it is committed
 * when `run` resolves.
 */
export interface SagaStore {
  db: Db;
  writes: SharedTransactions;
}

export interface Advance {
  state: SagaState;
  /** Why the saga is not finished, when it is not. */
  pending?: string;
}

const isDone = (journal: readonly JournalEntry[], step: string, direction: Direction) =>
  journal.some((e) => e.step === step && e.direction === direction && e.status === 'DONE');

function errorOf(result: StepResult): string | null {
  return 'error' in result ? result.error : null;
}

/**
 * Settles an attempt with its local effect, in one transaction. Answers the journal row as it now
 * stands, or undefined when another runner settled the attempt first (then nothing was applied).
 */
async function settle<C>(
  store: SagaStore,
  sagaId: string,
  step: string,
  direction: Direction,
  action: Action<C>,
  ctx: C,
  result: StepResult,
  started: JournalEntry | undefined,
  now: Date,
): Promise<JournalEntry | undefined> {
  return store.writes.run(async (tx) => {
    const receipt = 'receipt' in result ? (result.receipt ?? null) : null;
    const settled = { status: result.status, receipt, error: errorOf(result) };
    let entry: JournalEntry;
    if (started === undefined) {
      const row = { step, direction, key: action.key(sagaId, ctx), ...settled, at: now };
      entry = { seq: await insertEntry(tx, sagaId, row), ...row };
    } else if (await trySettleEntry(tx, started.seq, result.status, receipt, settled.error, null))
      entry = { ...started, ...settled };
    else return undefined; // settled by another runner
    if (action.apply) await action.apply(tx, ctx, result);
    return entry;
  });
}

/**
 * One attempt of one action: resolve an unknown earlier attempt by query first; otherwise commit
 * STARTED, call, settle. A local action is one transaction: its DONE row and its effect. Answers
 * the journal row the attempt left, when it knows it (undefined: another runner settled it).
 */
async function attempt<C>(
  store: SagaStore,
  now: () => Date,
  sagaId: string,
  step: string,
  direction: Direction,
  action: Action<C>,
  ctx: C,
  journal: readonly JournalEntry[],
): Promise<{ result: StepResult; entry: JournalEntry | undefined }> {
  const key = action.key(sagaId, ctx);
  if (!action.call) {
    const done: StepResult = { status: 'DONE' };
    return { result: done, entry: await settle(store, sagaId, step, direction, action, ctx, done, undefined, now()) };
  }
  // Any earlier attempt whose outcome we never learned may have acted: ask before acting again.
  const unresolved = journal.some(
    (e) => e.step === step && e.direction === direction && (e.status === 'STARTED' || e.status === 'UNKNOWN'),
  );
  if (unresolved && action.query) {
    const known = await action.query(ctx, key);
    if (known && (known.status === 'DONE' || known.status === 'REFUSED')) {
      // A row of its own: the journal keeps the attempt that was lost and what the query found.
      return {
        result: known,
        entry: await settle(store, sagaId, step, direction, action, ctx, known, undefined, now()),
      };
    }
  }
  const row = { step, direction, key, status: 'STARTED' as const, receipt: null, error: null, at: now() };
  // Committed before the call: "we may have acted" is on disk first.
  const started: JournalEntry = { seq: await store.writes.run((tx) => insertEntry(tx, sagaId, row)), ...row };
  const result = await action.call(ctx, key);
  if (action.afterCall) await faultPoint(action.afterCall, { sagaId, key });
  return { result, entry: await settle(store, sagaId, step, direction, action, ctx, result, started, now()) };
}

/** The journal after an attempt: its row replaced or added when known, read again when not. */
async function after(
  { db }: SagaStore,
  sagaId: string,
  journal: readonly JournalEntry[],
  entry: JournalEntry | undefined,
): Promise<JournalEntry[]> {
  if (!entry) return journalOf(db, sagaId);
  return [...journal.filter((e) => e.seq !== entry.seq), entry].sort((a, b) => a.seq - b.seq);
}

/**
 * Drives one saga as far as it can go now. Safe to repeat: every done action is skipped. `journal`:
 * the saga's journal as read under the caller's claim (read here otherwise).
 */
export async function advance<C>(
  store: SagaStore,
  now: () => Date,
  flow: Flow<C>,
  sagaId: string,
  ctx: C,
  known?: readonly JournalEntry[],
): Promise<Advance> {
  let journal = known ?? (await journalOf(store.db, sagaId));
  const refused = () => journal.some((e) => e.direction === 'do' && e.status === 'REFUSED');
  if (!refused()) {
    for (const step of flow.steps) {
      if (isDone(journal, step.name, 'do')) continue;
      const { result, entry } = await attempt(store, now, sagaId, step.name, 'do', step.forward, ctx, journal);
      journal = await after(store, sagaId, journal, entry);
      if (result.status === 'REFUSED') break;
      if (result.status !== 'DONE')
        return { state: 'FORWARD', pending: `${step.name}: ${errorOf(result) ?? result.status}` };
    }
    if (!refused()) return { state: 'DONE' };
  }
  // Reverse order of completion, from the journal (not of declaration): what was done last is undone first.
  const done = journal.filter((e) => e.direction === 'do' && e.status === 'DONE').reverse();
  let undone = 0;
  for (const completed of done) {
    const step = flow.steps.find((s) => s.name === completed.step);
    if (!step?.undo || isDone(journal, step.name, 'undo')) continue;
    if (undone++ > 0 && flow.betweenUndos) await faultPoint(flow.betweenUndos, { sagaId });
    const { result, entry } = await attempt(store, now, sagaId, step.name, 'undo', step.undo, ctx, journal);
    journal = await after(store, sagaId, journal, entry);
    // Stop at the first undo that cannot complete: what came before it stays in place.
    if (result.status !== 'DONE')
      return {
        state: 'COMPENSATING',
        pending: `undo ${step.name}: ${'error' in result ? result.error : result.status}`,
      };
  }
  return { state: 'COMPENSATED' };
}
