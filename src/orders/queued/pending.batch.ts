import type { Db } from '../../platform/db.ts';
import type { Principal } from '../../platform/auth.ts';
import {
  executeKeyedNow,
  oncePerKeyInProcess,
  type KeyScope,
  type KeyedDeps,
  type KeyedResult,
} from '../../idempotency/index.ts';
import type { RequestedLine } from '../create/one.ts';
import { buildPendingOrder, keyedQueuedCreate, pendingResponse } from './pending.ts';
import { chargeableTotal } from '../orders.lines.ts';
import { readSkuTerms, writeQueuedGroup, type QueuedRow, type SkuTerm } from './pending.batch.repo.ts';

/*
 * GROUP COMMIT OF QUEUED CREATES (202 PENDING). A queued create decides nothing about stock: it
 * writes its key (DONE, with its 202), the PENDING order, its log row, its lines and its stock
 * request. Alone that is one keyed transaction and one durable commit per buyer. Here concurrent
 * queued creates of a tenant are collected and written by ONE autocommit statement
 * (orders/queued/pending.batch.repo.ts): one round trip, one durable commit for the group, each member
 * with its own rows and its own 202, stored with its key in that commit (the replay is the first
 * answer's bytes). The SKUs' names and prices are read by one plain statement just before, as
 * the one-buyer path reads them by a plain statement in its transaction, or come from this
 * process's memory of them: the group's statement then checks them against the SKU rows and writes
 * nothing if one changed (a price, a name, a SKU gone), and the group goes again with them read
 * afresh. With one group of a tenant in flight, that read was a round trip between a group and the
 * next, every time (docs/benchmarks/journal.md §20).
 *
 * No timer: a group starts at once when fewer than MAX_IN_FLIGHT groups of the tenant are
 * running (setImmediate: the requests whose bytes arrived in this turn join it), so an idle
 * service adds no wait; under load the next group is everybody who queued meanwhile. A group of
 * one takes the one-buyer path (executeKeyedNow), exactly as before.
 *
 * Fallbacks, never a wrong answer: a member with an unknown SKU runs alone (its 404 is not stored
 * with a key); a member whose key existed runs alone unless it was DONE with the same digest (then
 * its stored answer is replayed); a statement that failed wrote nothing (a twin's key claimed in
 * another process, a lock timeout, a lost connection), and every member runs alone, where each
 * meets its own outcome. Killed at any point: the statement is atomic and no member had an answer.
 */

const MAX_GROUP = 256;
// One group of a tenant in flight: two overlapped their WAL flushes and woke each other, which on
// this machine's VM costs PostgreSQL more than it saves (94–96 µs per 202 against 137–143, alternated
// twice; docs/benchmarks/journal.md §17), as for the sync create's batches.
const MAX_IN_FLIGHT = 1;
// Names and prices remembered per database; past this many SKUs the memory starts again.
const MAX_TERMS = 10_000;

export interface QueuedCreate {
  principal: Principal;
  /** Canonical (by SKU). */
  lines: readonly RequestedLine[];
  scope: KeyScope;
  digest: string;
  /** The largest total the tenant's provider accepts (maxOrderAmountOf): past it, the one-buyer path's 400. */
  maxAmountMinor: number;
}

interface Member extends QueuedCreate {
  at: Date;
  resolve(result: KeyedResult): void;
  reject(error: unknown): void;
}

interface Lane {
  queue: Member[];
  inFlight: number;
  scheduled: boolean;
}

const lanesByDb = new WeakMap<Db, Map<string, Lane>>();
const termsByDb = new WeakMap<Db, Map<string, SkuTerm>>();
const termId = (tenantId: string, sku: string) => `${tenantId}\n${sku}`;

/** The terms of every one of `skus` as last read, or undefined when one of them is not known. */
function rememberedTerms(db: Db, tenantId: string, skus: readonly string[]): Map<string, SkuTerm> | undefined {
  const known = termsByDb.get(db);
  const terms = new Map<string, SkuTerm>();
  for (const sku of skus) {
    const term = known?.get(termId(tenantId, sku));
    if (!term) return undefined;
    terms.set(sku, term);
  }
  return terms;
}

async function readTerms(db: Db, tenantId: string, skus: readonly string[]): Promise<Map<string, SkuTerm>> {
  const terms = await readSkuTerms(db, tenantId, skus);
  let known = termsByDb.get(db);
  if (!known || known.size > MAX_TERMS) termsByDb.set(db, (known = new Map()));
  for (const sku of skus) known.delete(termId(tenantId, sku));
  for (const [sku, term] of terms) known.set(termId(tenantId, sku), term);
  return terms;
}

function laneFor(db: Db, tenantId: string): Lane {
  let lanes = lanesByDb.get(db);
  if (!lanes) lanesByDb.set(db, (lanes = new Map()));
  let lane = lanes.get(tenantId);
  if (!lane) lanes.set(tenantId, (lane = { queue: [], inFlight: 0, scheduled: false }));
  return lane;
}

/** A queued create, written by its tenant's next group. Same contract as executeKeyed. */
export function createQueuedBatched(deps: KeyedDeps, request: QueuedCreate): Promise<KeyedResult> {
  return oncePerKeyInProcess(
    request.scope,
    deps.waitMs,
    () =>
      new Promise<KeyedResult>((resolve, reject) => {
        const tenantId = request.principal.tenantId;
        const lane = laneFor(deps.db, tenantId);
        lane.queue.push({ ...request, at: deps.clock.now(), resolve, reject });
        schedule(deps, tenantId, lane);
      }),
  );
}

function schedule(deps: KeyedDeps, tenantId: string, lane: Lane): void {
  if (lane.scheduled || lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
  lane.scheduled = true;
  setImmediate(() => {
    lane.scheduled = false;
    if (lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
    const group = lane.queue.splice(0, MAX_GROUP);
    lane.inFlight++;
    void runGroup(deps, tenantId, group).finally(() => {
      lane.inFlight--;
      schedule(deps, tenantId, lane);
    });
  });
}

/** The one-buyer path: its own keyed transaction. */
function alone(deps: KeyedDeps, m: Member): void {
  executeKeyedNow(deps, {
    scope: m.scope,
    digest: m.digest,
    ...keyedQueuedCreate(m.principal, m.lines, () => deps.clock.now(), m.maxAmountMinor),
  }).then(m.resolve, m.reject);
}

async function runGroup(deps: KeyedDeps, tenantId: string, group: Member[], remembered = true): Promise<void> {
  if (group.length === 1) return alone(deps, group[0]!);
  const skus = [...new Set(group.flatMap((m) => m.lines.map((l) => l.sku)))];
  let terms = remembered ? rememberedTerms(deps.db, tenantId, skus) : undefined;
  const fromMemory = terms !== undefined;
  try {
    terms ??= await readTerms(deps.db, tenantId, skus);
  } catch {
    for (const m of group) alone(deps, m);
    return;
  }
  const members: Member[] = [];
  for (const m of group) {
    const known = m.lines.every((l) => terms.has(l.sku));
    if (
      known &&
      chargeableTotal(
        m.lines,
        m.lines.map((l) => terms.get(l.sku)!.price),
        m.maxAmountMinor,
      ) !== undefined
    )
      members.push(m);
    // SKU_NOT_FOUND or a total past the provider's limit (AMOUNT_TOO_LARGE): answered (and not stored) by the one-buyer path.
    else alone(deps, m);
  }
  if (members.length === 0) return;
  const rows: QueuedRow[] = members.map((m) => {
    const built = buildPendingOrder(
      m.principal,
      m.lines,
      m.lines.map((l) => terms.get(l.sku)!),
      m.at,
    );
    const { body, location } = pendingResponse(built);
    const { userId } = m.principal;
    return { ...built, userId, key: m.scope.key, digest: m.digest, body, location: location!, at: m.at };
  });
  let existing: Awaited<ReturnType<typeof writeQueuedGroup>>;
  try {
    existing = await writeQueuedGroup(deps.db, tenantId, rows, deps.waitMs);
  } catch {
    // Nothing of the statement was written: each member meets its own outcome alone.
    for (const m of members) alone(deps, m);
    return;
  }
  if (existing === 'stale') {
    // Nothing was written. Remembered terms: once more with them read afresh. Read just now and
    // changed already: each member alone, where its own transaction reads them.
    if (fromMemory) return runGroup(deps, tenantId, members, false);
    for (const m of members) alone(deps, m);
    return;
  }
  const found = new Map(existing.map((e) => [`${e.user_id}\n${e.key}`, e]));
  members.forEach((m, i) => {
    const before = found.get(`${m.principal.userId}\n${m.scope.key}`);
    if (!before) {
      const row = rows[i]!;
      return m.resolve({ status: 202, body: row.body, location: row.location, replayed: false });
    }
    if (before.state === 'DONE' && before.digest === m.digest && before.status !== null && before.body !== null)
      return m.resolve({
        status: before.status,
        body: before.body,
        ...(before.location ? { location: before.location } : {}),
        replayed: true,
      });
    alone(deps, m); // a reused key (422) or one in flight elsewhere: the one-buyer path answers
  });
}

/** FLASHPAY_QUEUED_BATCH=0 turns the group commit off (the A/B bench; read per request). */
export const queuedBatchEnabled = () => process.env.FLASHPAY_QUEUED_BATCH !== '0';
