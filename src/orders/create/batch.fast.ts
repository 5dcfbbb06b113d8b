import type { Db } from '../../platform/db.ts';
import type { KeyedDeps, KeyedResult } from '../../idempotency/index.ts';
import { createdResponse, refusalResponse } from './one.ts';
import { batchKeyId } from './batch.repo.ts';
import { tryFastBatch, type FastBuyer, type SkuDefinition } from './batch.fast.repo.ts';
import { lineReservationKeyFor } from '../orders.keys.ts';
import { chargeableTotal } from '../orders.lines.ts';
import { newOrderId } from '../orders.repo.ts';
import type { BatchedCreate } from './batch.lanes.ts';
import { findSkuTerms } from '../../stock/index.ts';

/*
 * THE ONE-STATEMENT BATCH. A batch whose buyers each want one unit of a SKU without a per-user
 * limit needs no decision that the database cannot take itself: the first LEAST(available, n)
 * new keys, in arrival order, get a unit. So claim, decision and writes go in one autocommit
 * statement (orders/create/batch.fast.repo.ts): one round trip and one durable commit per batch, where the
 * transactional batch needs four (BEGIN, claim + read, apply, COMMIT), and the SKU's row lock is
 * held for that statement's decrement and its commit.
 *
 * The buyers' 201 bodies (name, price, hold expiry) are built before the statement from the SKU's
 * definition as this process last read it (SKU DEFINITION CACHE, per pool). The cache is never
 * trusted: the statement compares the definition with the row it reads (and again on the row it
 * locks for the decrement) and, if a price, name,
 * hold time or limit changed (an admin PATCH, from any process), writes nothing and returns the
 * current definition; the batch then runs on the transactional path, which reads the row itself.
 * A SKU this process has not seen yet is read first (one plain read by primary key, no lock): a
 * shop with many SKUs sees most of them for the first time, and the transactional path costs a
 * transaction and three round trips where the read and the statement cost two.
 *
 * Lock order: the statement inserts the keys and every row first and takes the SKU row's lock
 * last, with the decrement (keys, then SKU row: the order of the transactional paths, so the same
 * key in flight in two processes makes one wait for the other, where the reverse order could deadlock). It decides on a plain read of the row;
 * if the locked row then has fewer units (another batch, path or process took some since) or a
 * new definition, the statement writes nothing (FPB01) and the batch runs on the transactional
 * path, which decides on the locked row. At the end of stock that is one wasted statement per
 * batch that raced; in the middle of a sale the read is never short, and batches of other processes
 * (one per SKU in flight per process, orders/create/batch.ts) overlap their inserts while one holds the
 * row for its commit.
 *
 * Crash: the statement is atomic. Killed before it is sent, nothing happened; killed after, the
 * database commits it or not as a whole, and no buyer had an answer: each retry replays its key or
 * executes. There is no moment "rows written, COMMIT not sent" in this form.
 */

// Per pool: tests run several stacks (databases) in one process. Bounded: a catalogue larger than
// this is served from the statement's own check after a reset, never from memory that grows with it.
const definitionsByDb = new WeakMap<Db, Map<string, SkuDefinition>>();
const MAX_DEFINITIONS = 50_000;

const definitionId = (tenantId: string, sku: string) => `${tenantId}\u0000${sku}`;

/** What the transactional batch read (or the statement reported): the next batch builds its answers from it. */
export function rememberDefinition(db: Db, tenantId: string, sku: string, definition: SkuDefinition): void {
  let definitions = definitionsByDb.get(db);
  if (!definitions) definitionsByDb.set(db, (definitions = new Map()));
  if (definitions.size >= MAX_DEFINITIONS) definitions.clear();
  const { name, price, holdTtlMs, perUserLimit } = definition;
  definitions.set(definitionId(tenantId, sku), { name, price, holdTtlMs, perUserLimit });
}

function forgetDefinition(db: Db, tenantId: string, sku: string): void {
  definitionsByDb.get(db)?.delete(definitionId(tenantId, sku));
}

/** First sight of a SKU in this process: its definition read without a lock. Undefined: no such SKU (the transactional path answers). */
async function readDefinition(db: Db, tenantId: string, sku: string): Promise<SkuDefinition | undefined> {
  const terms = await findSkuTerms(db, tenantId, sku);
  if (!terms) return undefined;
  rememberDefinition(db, tenantId, sku, terms);
  return terms;
}

/** The definition this process would build answers from (for tests). */
export function knownDefinition(db: Db, tenantId: string, sku: string): SkuDefinition | undefined {
  return definitionsByDb.get(db)?.get(definitionId(tenantId, sku));
}

/** Per buyer of the batch, in the batch's order: an answer, or undefined for the one-buyer path. */
export interface FastAnswers {
  answers: (KeyedResult | undefined)[];
  /** Units left once the statement committed; undefined when it did not lock the row (replays only). */
  availableAfter: number | undefined;
}

/**
 * ONE 201 PER BATCH: a granted buyer's body differs from another's by the order id only (the SKU's
 * name and price, the hold's end are the batch's), so the body is built once, split on its order
 * id, and joined with each buyer's id (here, and in the statement for the stored copy). Proven per
 * batch, not assumed: the parts joined with a second id must give exactly the body built for that
 * id, or the batch takes the transactional path (a name that happened to contain the id).
 */
function createdTemplate(tenantId: string, sku: string, definition: SkuDefinition, expiresAt: Date) {
  const build = (orderId: string) => {
    const reservationKey = lineReservationKeyFor(orderId, 1, 1);
    const line = { lineNo: 1, sku, name: definition.name, unitPrice: definition.price, quantity: 1 };
    return createdResponse(
      { orderId, status: 'CREATED', sku, quantity: 1, amount: definition.price },
      [{ ...line, amount: definition.price, reservationKey }],
      [{ tenantId, key: reservationKey, userId: '', sku, quantity: 1, status: 'HELD', expiresAt }],
    );
  };
  const [a, b] = [newOrderId(), newOrderId()];
  const [first, second] = [build(a), build(b)];
  const body = first.body.split(a);
  const location = (first.location ?? '').split(a);
  const same = body.join(b) === second.body && location.join(b) === (second.location ?? '');
  return same ? { body, location } : undefined;
}

/**
 * Runs the batch as one statement when it qualifies and the definition is known. Undefined: it
 * did not run, or wrote nothing (unknown or changed definition, no SKU row); the caller runs the
 * transactional batch. Throws when the statement failed: nothing of it was written.
 */
export async function tryOneStatementBatch(
  deps: KeyedDeps,
  tenantId: string,
  sku: string,
  batch: readonly BatchedCreate[],
): Promise<FastAnswers | undefined> {
  if (batch.some((p) => p.line.quantity !== 1)) return undefined;
  const definition =
    definitionsByDb.get(deps.db)?.get(definitionId(tenantId, sku)) ?? (await readDefinition(deps.db, tenantId, sku));
  if (!definition || definition.perUserLimit !== null) return undefined;
  // A total past the tenant's provider's maximum: the transactional batch reads the row and sends
  // every buyer to the one-buyer path, which answers 400 AMOUNT_TOO_LARGE.
  if (batch.some((p) => chargeableTotal([p.line], [definition.price], p.maxAmountMinor) === undefined))
    return undefined;
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + definition.holdTtlMs);
  const template = createdTemplate(tenantId, sku, definition, expiresAt);
  if (!template) return undefined;
  const buyers: FastBuyer[] = batch.map((p) => {
    const orderId = newOrderId();
    return {
      userId: p.principal.userId,
      key: p.scope.key,
      digest: p.digest,
      orderId,
      reservationKey: lineReservationKeyFor(orderId, 1, 1),
      location: template.location.join(orderId),
    };
  });
  const refusal = refusalResponse('SOLD_OUT', sku);
  const outcome = await tryFastBatch(deps.db, {
    tenantId,
    sku,
    definition,
    buyers,
    expiresAt,
    createdParts: template.body,
    refusalBody: refusal.body,
    now,
    lockTimeoutMs: deps.waitMs,
  });
  if (outcome.kind === 'short') return undefined;
  if (outcome.kind === 'missing') {
    forgetDefinition(deps.db, tenantId, sku);
    return undefined;
  }
  if (outcome.kind === 'stale') {
    rememberDefinition(deps.db, tenantId, sku, outcome.definition);
    return undefined;
  }
  let rank = 0;
  const answers = batch.map((p, i): KeyedResult | undefined => {
    const id = batchKeyId(p.principal.userId, p.scope.key);
    if (outcome.existing.has(id)) {
      const done = outcome.done.get(id);
      // In flight elsewhere, abandoned, or reused with another request: the one-buyer path answers.
      return done && done.digest === p.digest ? { ...done.response, replayed: true } : undefined;
    }
    rank++;
    if (rank > outcome.granted) return { ...refusal, replayed: false };
    const buyer = buyers[i]!;
    return { status: 201, body: template.body.join(buyer.orderId), location: buyer.location, replayed: false };
  });
  const before = outcome.availableBefore;
  const after = outcome.availableAfter ?? (before === undefined ? undefined : before - outcome.granted);
  return { answers, availableAfter: after };
}
