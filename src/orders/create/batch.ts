import { inTx } from '../../platform/db.ts';
import { faultPoint } from '../../platform/faultpoints.ts';
import {
  executeKeyedNow,
  oncePerKeyInProcess,
  type KeyedDeps,
  type KeyedResult,
  type StoredResponse,
} from '../../idempotency/index.ts';
import { keyedCreate, refusalResponse } from './one.ts';
import {
  batchKeyId,
  claimKeysAndReadSku,
  completeBatchKeys,
  lockHoldings,
  lockSkuForBatch,
  tryApplyBatch,
  type BatchSku,
  type DoneKey,
} from './batch.repo.ts';
import { tryRefuseSoldOut } from './waves.repo.ts';
import { knownDefinition, rememberDefinition, tryOneStatementBatch } from './batch.fast.ts';
import { chargeableTotal } from '../orders.lines.ts';
import { decide } from './batch.decide.ts';
import { forgetIfIdle, laneFor, type BatchedCreate, type Lane, type Pending } from './batch.lanes.ts';

/*
 * GROUP COMMIT PER SKU for one-line sync creates. Concurrent buyers of one SKU are queued in this
 * process and applied as one transaction (orders/create/batch.repo.ts): the keys claimed and the SKU read
 * in one statement, then one statement that takes the units for the whole batch and writes every
 * buyer's rows, then one durable commit; each buyer gets its own answer, stored with its key in
 * that commit. There is no timer: a batch starts as soon as fewer than MAX_IN_FLIGHT batches of
 * the SKU are running, and takes everybody who queued meanwhile, so the batch grows with the load.
 *
 * Lock order (stock/reservations/repo.ts): key rows, then the SKU row (taken by the batch's decrement, or by
 * FOR UPDATE in the pessimistic pass), then holding rows only while the SKU row is locked. Several
 * processes batch on their own; their batches queue on the SKU's row lock like single buyers did.
 *
 * SOLD-OUT FAST PATH: once a batch leaves the SKU at 0, the lane is marked sold out and later
 * buyers do not queue for a batch: a wave of them is answered by one autocommit statement that
 * reads the committed `available` and stores their 409 keys (tryRefuseSoldOut), without the SKU's
 * row lock. The mark is only a routing hint: every wave reads the committed state taken after its
 * buyers arrived, so a unit that came back (cancel, expiry, restock, in any process) is seen by
 * the next wave, whose buyers then go to a batch and clear the mark.
 */

// Rows per batch statement: bounds one statement's size and one commit's latency.
const MAX_BATCH = 256;
// Batches of one SKU in flight at once. One: the next batch gathers everybody who arrives while this
// one commits. Two let the second insert while the first held the row, but the second then slept
// on the row lock and was woken at the first's commit, and on this machine's VM PostgreSQL's
// processes waking each other is most of its CPU: with one, 90 µs of PostgreSQL per buyer against
// 137–143 and 15 % more buyers/s, alternated twice (docs/benchmarks/journal.md §17).
const MAX_IN_FLIGHT = 1;
// Sold-out waves of one SKU in flight at once; each wave reads only after all of its buyers
// arrived. One rather than two for the same reason: two overlapped their WAL flushes and woke each
// other (PostgreSQL 42–45 µs per refusal against 63–66, 7–12 % more refusals/s, alternated twice).
const MAX_WAVES_IN_FLIGHT = 1;

export { isMarkedSoldOut, type BatchedCreate } from './batch.lanes.ts';

/** A one-line sync create, answered by the SKU's next batch (or wave). Same contract as executeKeyed. */
export function createBatched(deps: KeyedDeps, request: BatchedCreate): Promise<KeyedResult> {
  return oncePerKeyInProcess(
    request.scope,
    deps.waitMs,
    () =>
      new Promise<KeyedResult>((resolve, reject) => {
        const lane = laneFor(deps.db, request.principal.tenantId, request.line.sku);
        const pending = { ...request, resolve, reject };
        // A total the provider would refuse is answered (400 AMOUNT_TOO_LARGE) by the one-buyer
        // path. Unknown or changed terms cannot slip one into a batch either: the database's
        // CHECK (migration 152) fails the batch's statement, and then every buyer runs alone.
        if (pastProviderLimit(deps, request)) return runAlone(deps, pending);
        if (lane.soldOut) {
          lane.refusals.push(pending);
          scheduleWave(deps, lane);
        } else {
          lane.queue.push(pending);
          scheduleBatch(deps, lane);
        }
      }),
  );
}

function pastProviderLimit(deps: KeyedDeps, request: BatchedCreate): boolean {
  const known = knownDefinition(deps.db, request.principal.tenantId, request.line.sku);
  return known !== undefined && chargeableTotal([request.line], [known.price], request.maxAmountMinor) === undefined;
}

/** One buyer alone, the one-transaction path: for keys that exist already and for failed batches. */
function runAlone(deps: KeyedDeps, p: Pending): void {
  executeKeyedNow(deps, {
    scope: p.scope,
    digest: p.digest,
    ...keyedCreate(p.principal, [p.line], () => deps.clock.now(), p.maxAmountMinor),
  }).then(p.resolve, p.reject);
}

function scheduleBatch(deps: KeyedDeps, lane: Lane): void {
  if (lane.scheduled || lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
  lane.scheduled = true;
  // setImmediate: the requests whose bytes arrived in this turn of the event loop join the batch.
  setImmediate(() => {
    lane.scheduled = false;
    if (lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
    const batch = lane.queue.splice(0, MAX_BATCH);
    lane.inFlight++;
    void runBatch(deps, lane, batch).finally(() => {
      lane.inFlight--;
      scheduleBatch(deps, lane);
      forgetIfIdle(deps.db, lane);
    });
  });
}

class SkuMissing extends Error {}
/** The SKU's price (as this batch read it) makes some buyer's total past their provider's maximum. */
class PastProviderLimit extends Error {}

interface Decided {
  answers: Map<string, StoredResponse>;
  available: number;
  /** Keys that were DONE before the batch: replayed from the batch's own read. */
  done: Map<string, DoneKey>;
}

async function runBatch(deps: KeyedDeps, lane: Lane, batch: Pending[]): Promise<void> {
  let fast: Awaited<ReturnType<typeof tryOneStatementBatch>>;
  try {
    fast = await tryOneStatementBatch(deps, lane.tenantId, lane.sku, batch);
  } catch {
    // Nothing of the statement was written (a key claimed by another process meanwhile, a lock
    // timeout, a lost connection before its commit): every buyer runs alone, as below.
    for (const p of batch) runAlone(deps, p);
    return;
  }
  if (fast) {
    if (fast.availableAfter === 0) lane.soldOut = true;
    for (const [i, p] of batch.entries()) {
      const answer = fast.answers[i];
      if (answer) p.resolve(answer);
      else runAlone(deps, p);
    }
    return;
  }
  let decided: Decided;
  try {
    decided = await inTx(deps.db, (tx) => applyBatch(tx, deps, lane, batch), { lockTimeoutMs: deps.waitMs });
  } catch {
    // Whatever failed the batch (a key row locked by another process past lock_timeout, a
    // missing SKU, a lost connection), nothing of it committed — or, if the COMMIT's answer was
    // lost, each key tells: every buyer runs alone and gets the answer the one-buyer path gives.
    for (const p of batch) runAlone(deps, p);
    return;
  }
  if (decided.available === 0) lane.soldOut = true;
  for (const p of batch) {
    const id = batchKeyId(p.principal.userId, p.scope.key);
    const answer = decided.answers.get(id);
    const done = decided.done.get(id);
    if (answer) p.resolve({ ...answer, replayed: false });
    else if (done && done.digest === p.digest) p.resolve({ ...done.response, replayed: true });
    // The key is in flight elsewhere, or reused with another request: the one-buyer path answers
    // (it waits for the owner, takes over an abandoned key, or refuses the reuse) as the contract says.
    else runAlone(deps, p);
  }
}

async function applyBatch(
  tx: Parameters<typeof claimKeysAndReadSku>[0],
  deps: KeyedDeps,
  lane: Lane,
  batch: Pending[],
) {
  const now = deps.clock.now();
  const keys = batch.map((p) => ({ userId: p.principal.userId, key: p.scope.key, digest: p.digest }));
  const claimed = await claimKeysAndReadSku(
    tx,
    lane.tenantId,
    lane.sku,
    keys,
    now,
    new Date(now.getTime() + deps.leaseMs),
  );
  if (!claimed.sku) throw new SkuMissing(`no SKU ${lane.sku}`);
  rememberDefinition(deps.db, lane.tenantId, lane.sku, claimed.sku);
  const price = claimed.sku.price;
  // Rolls the claims back: every buyer runs alone, and the one-buyer path answers 400 AMOUNT_TOO_LARGE.
  if (batch.some((p) => chargeableTotal([p.line], [price], p.maxAmountMinor) === undefined))
    throw new PastProviderLimit(`${lane.sku} at ${price} is past a buyer's provider maximum`);
  const mine = batch.filter((p) => claimed.owned.has(batchKeyId(p.principal.userId, p.scope.key)));
  if (mine.length === 0) return { answers: new Map(), available: claimed.sku.available, done: claimed.done };
  let sku: BatchSku = claimed.sku;
  let holdings = new Map<string, number>();
  let locked = false;
  if (sku.perUserLimit !== null) {
    // Holdings need the SKU row locked first (lock order 4): the pessimistic pass from the start.
    sku = (await lockSkuForBatch(tx, lane.tenantId, lane.sku)) ?? sku;
    holdings = await lockHoldings(tx, lane.tenantId, lane.sku, [...new Set(mine.map((p) => p.principal.userId))]);
    locked = true;
  }
  for (;;) {
    const plan = decide(lane.tenantId, lane.sku, mine, sku, holdings, now);
    let available: number | undefined = sku.available;
    if (plan.grants.length === 0) await completeBatchKeys(tx, lane.tenantId, plan.answers, now);
    else {
      const applied = await tryApplyBatch(tx, {
        tenantId: lane.tenantId,
        sku: lane.sku,
        name: sku.name,
        price: sku.price,
        grants: plan.grants,
        holdings: plan.holdings,
        answers: plan.answers,
        now,
      });
      available = applied?.available;
    }
    if (available !== undefined) {
      await faultPoint('create.batch.before-commit', { sku: lane.sku, batch: mine.length });
      const answers = new Map(plan.answers.map((a) => [batchKeyId(a.userId, a.key), a]));
      return { answers, available, done: claimed.done };
    }
    // Fewer units than the plain read said (another process or path took some): decide again
    // on the locked row. Nothing of the failed statement was written.
    if (locked) throw new Error('batch: the locked SKU row refused the decrement it allowed');
    const relocked = await lockSkuForBatch(tx, lane.tenantId, lane.sku);
    if (!relocked) throw new SkuMissing(`no SKU ${lane.sku}`);
    sku = relocked;
    locked = true;
  }
}

function scheduleWave(deps: KeyedDeps, lane: Lane): void {
  if (lane.waveScheduled || lane.wavesInFlight >= MAX_WAVES_IN_FLIGHT || lane.refusals.length === 0) return;
  lane.waveScheduled = true;
  setImmediate(() => {
    lane.waveScheduled = false;
    if (lane.wavesInFlight >= MAX_WAVES_IN_FLIGHT || lane.refusals.length === 0) return;
    // Only buyers who arrived before the wave's statement starts share its read.
    const wave = lane.refusals.splice(0, MAX_BATCH);
    lane.wavesInFlight++;
    void runWave(deps, lane, wave).finally(() => {
      lane.wavesInFlight--;
      scheduleWave(deps, lane);
    });
  });
}

async function runWave(deps: KeyedDeps, lane: Lane, wave: Pending[]): Promise<void> {
  const refusal = refusalResponse('SOLD_OUT', lane.sku);
  let outcome: Awaited<ReturnType<typeof tryRefuseSoldOut>>;
  try {
    const buyers = wave.map((p) => ({
      userId: p.principal.userId,
      key: p.scope.key,
      digest: p.digest,
      quantity: p.line.quantity,
    }));
    outcome = await tryRefuseSoldOut(deps.db, lane.tenantId, lane.sku, buyers, refusal.body, deps.clock.now());
  } catch {
    for (const p of wave) runAlone(deps, p);
    return;
  }
  const available = outcome.available;
  let back = false;
  for (const p of wave) {
    const id = batchKeyId(p.principal.userId, p.scope.key);
    const done = outcome.done.get(id);
    if (outcome.refused.has(id)) p.resolve({ ...refusal, replayed: false });
    else if (done && done.digest === p.digest) p.resolve({ ...done.response, replayed: true });
    else if (available === undefined || p.line.quantity > available) runAlone(deps, p);
    else {
      // Units came back since the lane was marked: this buyer goes to a batch.
      lane.queue.push(p);
      back = true;
    }
  }
  if (back) {
    lane.soldOut = false;
    scheduleBatch(deps, lane);
  }
}
