import { inTx, pgCode, sendWithCommit, sleep, type Tx } from '../platform/db.ts';
import { inProgress, keyReused } from './idempotency.errors.ts';
import { claimOnce } from './idempotency.once.ts';
import {
  completeKey,
  completeKeysWithCommit,
  completeKeyWithCommit,
  findKey,
  tryInsertKey,
  tryInsertKeys,
  tryTakeOverKey,
  type KeyRecord,
  type KeyScope,
  type StoredResponse,
} from './idempotency.repo.ts';
import type { KeyClaim, KeyedDeps, KeyedOperation, KeyedResult, KeyedStep } from './idempotency.types.ts';

const POLL_MS = 25;
const LOCK_NOT_AVAILABLE = '55P03';

function replay(record: KeyRecord, digest: string): KeyedResult | undefined {
  if (record.digest !== digest) throw keyReused();
  return record.state === 'DONE' && record.response ? { ...record.response, replayed: true } : undefined;
}

async function claim(deps: KeyedDeps, op: KeyedOperation): Promise<KeyClaim> {
  if (op.finalOnly) return claimOnce(deps, op);
  return inTx(
    deps.db,
    async (tx) => {
      const now = deps.clock.now();
      if (await insertOrWait(tx, op, now, deps.leaseMs)) {
        const step = await op.start(tx);
        if ('final' in step) {
          completeKeyWithCommit(tx, op.scope, step.final, now);
          if (step.durable === false) sendWithCommit(tx, { text: 'SET LOCAL synchronous_commit = off' });
        }
        return { owned: true, step } as const;
      }
      // The row exists and is committed (ON CONFLICT waited for any in-flight owner); a new
      // statement sees it. Compare digests before anything else: a reused key has no side effect.
      const record = await findKey(tx, op.scope);
      if (!record) throw new Error('idempotency key vanished');
      if (record.digest !== op.digest) throw keyReused();
      return { owned: false, record } as const;
    },
    { lockTimeoutMs: deps.waitMs, pipeline: deps.pipeline ?? true },
  );
}

/**
 * The key insert, which waits on a concurrent owner's uncommitted row. Only a lock timeout here
 * means "in progress"; one later in the operation (a hot row) is the database being busy.
 */
async function insertOrWait(tx: Tx, op: KeyedOperation, now: Date, leaseMs: number): Promise<boolean> {
  try {
    return await tryInsertKey(tx, op.scope, op.digest, now, new Date(now.getTime() + leaseMs));
  } catch (error) {
    if (pgCode(error) === LOCK_NOT_AVAILABLE) throw inProgress();
    throw error;
  }
}

async function tryTakeOver(deps: KeyedDeps, op: KeyedOperation): Promise<KeyedResult | undefined> {
  const abandoned = op.abandoned;
  if (!abandoned) return undefined;
  return inTx(deps.db, async (tx) => {
    const now = deps.clock.now();
    if (!(await tryTakeOverKey(tx, op.scope, now, new Date(now.getTime() + deps.leaseMs)))) return undefined;
    const response = await abandoned(tx);
    await completeKey(tx, op.scope, response, now);
    return { ...response, replayed: false };
  });
}

/** Waits (bounded) for a PROCESSING key to complete, then replays; takes over an abandoned one. */
async function awaitCompletion(deps: KeyedDeps, op: KeyedOperation, record: KeyRecord): Promise<KeyedResult> {
  const deadline = Date.now() + deps.waitMs;
  let current: KeyRecord | undefined = record;
  for (;;) {
    if (!current) throw new Error('idempotency key vanished');
    const replayed = replay(current, op.digest);
    if (replayed) return replayed;
    if (current.lockedUntil && current.lockedUntil < deps.clock.now()) {
      const taken = await tryTakeOver(deps, op);
      if (taken) return taken;
    }
    if (Date.now() >= deadline) throw inProgress();
    await sleep(POLL_MS);
    current = await findKey(deps.db, op.scope);
  }
}

// Requests with a key this process is executing right now: a same-key request waits here, in
// memory, instead of in a transaction on the key row's lock (one pool connection each: a burst of
// retries of one key could otherwise take the whole pool).
const executing = new Map<string, Promise<unknown>>();

async function waitForSameKey(previous: Promise<unknown>, waitMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), waitMs);
  });
  const outcome = await Promise.race([
    previous.then(
      () => 'done' as const,
      () => 'done' as const,
    ),
    expired,
  ]);
  clearTimeout(timer);
  if (outcome === 'expired') throw inProgress();
}

/**
 * Runs `run` as the only request with this key in this process: a same-key request that arrives
 * while it runs waits for it (bounded), then runs its own `run` (which finds the key and replays).
 * The batched create path shares this map, so two requests with one key never meet in one batch.
 */
export async function oncePerKeyInProcess<T>(scope: KeyScope, waitMs: number, run: () => Promise<T>): Promise<T> {
  const id = JSON.stringify([scope.tenantId, scope.userId, scope.operation, scope.key]);
  const previous = executing.get(id);
  if (previous) await waitForSameKey(previous, waitMs);
  const running = run();
  executing.set(id, running);
  try {
    return await running;
  } finally {
    if (executing.get(id) === running) executing.delete(id);
  }
}

/**
 * Runs an operation at most once per (tenant, user, operation, key). The key record and the
 * effect commit together, so "key completed" and "order exists" are one fact (seed 001).
 */
export function executeKeyed(deps: KeyedDeps, op: KeyedOperation): Promise<KeyedResult> {
  return oncePerKeyInProcess(op.scope, deps.waitMs, () => executeKeyedNow(deps, op));
}

/** executeKeyed without the in-process wait: for a caller already inside oncePerKeyInProcess. */
export async function executeKeyedNow(deps: KeyedDeps, op: KeyedOperation): Promise<KeyedResult> {
  const claimed = await claim(deps, op);
  if (!claimed.owned) return awaitCompletion(deps, op, claimed.record);
  const step = claimed.step;
  if ('final' in step) return { ...step.final, replayed: false };
  const response = await step.continueWith((tx, final) => completeKey(tx, op.scope, final, deps.clock.now()));
  return { ...response, replayed: false };
}

/**
 * The claim of executeKeyed in a transaction the caller owns and may share with other requests'
 * claims (the pays' grouped PAYING commit, src/payments/pay.claims.ts): the key inserted, the
 * operation started, a final answer completed, all in `tx`. The caller runs it with
 * `lock_timeout` = `waitMs`, as executeKeyed does. A `durable: false` answer stays durable here:
 * the commit is shared, and it is never weakened for one member. A statement that fails aborts
 * the whole transaction: the caller then claims each request alone (`claimKeyAlone`).
 */
export async function claimKeyIn(
  tx: Tx,
  deps: Pick<KeyedDeps, 'clock' | 'leaseMs'>,
  op: KeyedOperation,
): Promise<KeyClaim> {
  const now = deps.clock.now();
  if (await insertOrWait(tx, op, now, deps.leaseMs)) {
    const step = await op.start(tx);
    if ('final' in step) await completeKey(tx, op.scope, step.final, now);
    return { owned: true, step };
  }
  const record = await findKey(tx, op.scope);
  if (!record) throw new Error('idempotency key vanished');
  if (record.digest !== op.digest) throw keyReused();
  return { owned: false, record };
}

/** claimKeyIn in a transaction of its own: a request whose shared claim failed. */
export function claimKeyAlone(deps: KeyedDeps, op: KeyedOperation): Promise<KeyClaim> {
  return inTx(deps.db, (tx) => claimKeyIn(tx, deps, op), { lockTimeoutMs: deps.waitMs });
}

/**
 * executeKeyed whose claim is made by `claimWith` (claimKeyIn in a shared transaction, or
 * claimKeyAlone): the same once-per-key guard, the same replay, wait and takeover of a key that
 * an earlier request owns, the same completion of a continued operation.
 */
export function executeKeyedWith(
  deps: KeyedDeps,
  op: KeyedOperation,
  claimWith: (op: KeyedOperation) => Promise<KeyClaim>,
): Promise<KeyedResult> {
  return oncePerKeyInProcess(op.scope, deps.waitMs, async () => {
    const claimed = await claimWith(op);
    if (!claimed.owned) return awaitCompletion(deps, op, claimed.record);
    const step = claimed.step;
    if ('final' in step) return { ...step.final, replayed: false };
    const response = await step.continueWith((tx, final) => completeKey(tx, op.scope, final, deps.clock.now()));
    return { ...response, replayed: false };
  });
}

/**
 * claimKeyIn for a group of requests of one kind, set-based: their keys inserted in one statement,
 * then `startMany` starts the requests that own their key, together (it returns their steps, in
 * the order given); final answers are completed together with the COMMIT, and earlier requests'
 * records read one by one (the rare case). A request whose key another request holds uncommitted waits as in claimKeyIn.
 */
export async function claimKeysIn(
  tx: Tx,
  deps: Pick<KeyedDeps, 'clock' | 'leaseMs'>,
  ops: readonly KeyedOperation[],
  startMany: (tx: Tx, owned: readonly KeyedOperation[]) => Promise<KeyedStep[]>,
): Promise<KeyClaim[]> {
  const now = deps.clock.now();
  let owned: Set<number>;
  try {
    owned = await tryInsertKeys(tx, ops, now, new Date(now.getTime() + deps.leaseMs));
  } catch (error) {
    if (pgCode(error) === LOCK_NOT_AVAILABLE) throw inProgress();
    throw error;
  }
  const mine = ops.filter((_, i) => owned.has(i));
  const steps = mine.length > 0 ? await startMany(tx, mine) : [];
  const claims: KeyClaim[] = [];
  const finals: Array<{ scope: KeyScope; response: StoredResponse }> = [];
  for (const [i, op] of ops.entries()) {
    if (owned.has(i)) {
      const step = steps[mine.indexOf(op)]!;
      if ('final' in step) finals.push({ scope: op.scope, response: step.final });
      claims.push({ owned: true, step });
      continue;
    }
    const record = await findKey(tx, op.scope);
    if (!record) throw new Error('idempotency key vanished');
    if (record.digest !== op.digest) throw keyReused();
    claims.push({ owned: false, record });
  }
  // Every final answer completed in one statement, sent with the COMMIT (a group of wallet pays is all finals).
  completeKeysWithCommit(tx, finals, now);
  return claims;
}
