import { inTx, type Db, type Tx } from '../../platform/db.ts';
import { reserve } from '../reservations/repo.ts';
import { tryConfirm, tryRelease, tryUnconfirm } from '../reservations/finish.ts';
import { publishSkuChanges } from './replica.ts';
import { faultPoint } from '../../platform/faultpoints.ts';
import { deductRun, setBasedDeductions, type RequestPayload, type StockAnswer } from './deduct-many.ts';

// The stock service (seed 004): takes stock requests from its inbox, applies each at most once by
// its request key, and answers through its own outbox. Requests are applied in arrival order, a
// batch per transaction, by one applier at a time (an advisory lock), which is what lets a flash
// sale's burst be absorbed: one small row per buyer at the API, then batches here.

// One applier per database: arrival order per SKU holds across processes; a second waits its turn.
const APPLIER_LOCK = 0x5_70c4; // pg_try_advisory_xact_lock key, shared by every process on this database
// One batch locks at most this many inbox rows and their SKU rows (set-based: a few statements per batch).
export const STOCK_BATCH = 1_000;

export const STOCK_REQUEST_KINDS = [
  'STOCK_DEDUCTION_REQUESTED',
  'STOCK_RELEASE_REQUESTED',
  // Split databases only: the shop's mirror confirmed or released a hold; the stock service follows.
  'STOCK_CONFIRM_REQUESTED',
  'STOCK_HOLD_RELEASE_REQUESTED',
] as const;

export interface ApplyOptions {
  /** This stock service has its own database: its RESERVED results ask the shop to mirror the holds, and SKU definitions are published. */
  apart?: boolean;
}

export interface StockRequest {
  request_key: string;
  order_id: string;
  event_type: string;
  payload: Record<string, unknown>;
}

/**
 * Takes delivered requests into the inbox (the database carries them when no broker is set). A key
 * seen before is a duplicate: nothing is applied again, and when it was already applied its first
 * result is published once more, so a re-sent request is always answered. Unknown types are parked.
 */
export async function receiveStockRequests(
  db: Db,
  requests: readonly StockRequest[],
  now: Date,
): Promise<{ fresh: number; duplicates: number }> {
  if (requests.length === 0) return { fresh: 0, duplicates: 0 };
  return inTx(db, (tx) => receiveStockRequestsIn(tx, requests, now));
}

/** receiveStockRequests in the caller's transaction (a delivery that commits with its sender's mark). */
export async function receiveStockRequestsIn(
  tx: Tx,
  requests: readonly StockRequest[],
  now: Date,
): Promise<{ fresh: number; duplicates: number }> {
  // One row per key in the statement (a key twice in one delivery is one row and one duplicate).
  const unique = [...new Map(requests.map((r) => [r.request_key, r])).values()];
  if (unique.length === 0) return { fresh: 0, duplicates: 0 };
  const kind = (r: StockRequest) => (STOCK_REQUEST_KINDS as readonly string[]).includes(r.event_type);
  // Arrival order is the delivery's order: seq is drawn row by row as the ordered SELECT yields them.
  const inserted = await tx.query<{
    request_key: string;
    order_id: string;
    fresh: boolean;
    applied_at: Date | null;
    result_type: string | null;
    result: Record<string, unknown> | null;
  }>(
    `INSERT INTO stock_inbox (request_key, event_type, order_id, payload, received_at, parked_at, error)
     SELECT k, t, o, p::jsonb, $5, CASE WHEN known THEN NULL ELSE $5::timestamptz END,
            CASE WHEN known THEN NULL ELSE 'unknown stock request type "' || t || '"' END
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $6::bool[]) WITH ORDINALITY AS r(k, t, o, p, known, n)
     ORDER BY n
     ON CONFLICT (request_key) DO UPDATE SET deliveries = stock_inbox.deliveries + 1
     RETURNING request_key, order_id, (xmax = 0) AS fresh, applied_at, result_type, result`,
    [
      unique.map((r) => r.request_key),
      unique.map((r) => r.event_type),
      unique.map((r) => r.order_id),
      unique.map((r) => JSON.stringify(r.payload)),
      now,
      unique.map(kind),
    ],
  );
  const fresh = inserted.rows.filter((r) => r.fresh).length;
  // A duplicate of an applied request: its first result is published once more, so it is always answered.
  for (const r of inserted.rows)
    if (!r.fresh && r.applied_at && r.result_type && r.result)
      await publishResult(tx, r.request_key, r.order_id, r.result_type, r.result, now);
  return { fresh, duplicates: requests.length - fresh };
}

async function publishResult(
  tx: Tx,
  requestKey: string,
  orderId: string,
  type: string,
  payload: Record<string, unknown>,
  now: Date,
): Promise<void> {
  await tx.query(
    'INSERT INTO stock_outbox (request_key, order_id, event_type, payload, created_at) VALUES ($1, $2, $3, $4, $5)',
    [requestKey, orderId, type, payload, now],
  );
}

/** Every line held under its key, or none (a savepoint undoes the lines held before a refusal). */
async function deduct(tx: Tx, p: RequestPayload, now: Date): Promise<StockAnswer> {
  await tx.query('SAVEPOINT stock_deduct');
  const holds: Array<{ key: string; sku: string; quantity: number; expires_at: string | null }> = [];
  for (const line of [...p.lines].sort((a, b) => a.line_no - b.line_no)) {
    const [result] = await reserve(
      tx,
      [{ tenantId: p.tenant_id, key: line.key, userId: p.user_id, sku: line.sku, quantity: line.quantity }],
      now,
    );
    if (result?.outcome !== 'HELD') {
      await tx.query('ROLLBACK TO SAVEPOINT stock_deduct');
      return {
        type: 'STOCK_REJECTED',
        payload: { reason: result?.outcome === 'USER_LIMIT' ? 'USER_LIMIT' : 'SOLD_OUT', sku: line.sku },
      };
    }
    holds.push({
      key: line.key,
      sku: line.sku,
      quantity: line.quantity,
      expires_at: result.expiresAt?.toISOString() ?? null,
    });
  }
  await tx.query('RELEASE SAVEPOINT stock_deduct');
  return { type: 'STOCK_RESERVED', payload: { holds } };
}

/** Every HELD unit of the order back on sale; a unit already released (expiry) is simply not counted. */
async function release(tx: Tx, p: RequestPayload, now: Date): Promise<StockAnswer> {
  let released = 0;
  for (const line of p.lines) if (await tryRelease(tx, p.tenant_id, line.key, now)) released++;
  return { type: 'STOCK_RELEASED', payload: { released } };
}

/**
 * Split databases: the shop's mirror confirmed a hold (a pay) or released it (cancel, expiry,
 * compensation). The shop alone decides; its mirror already moved, so here a confirm of a HELD unit
 * or a release of a HELD or CONFIRMED one is applied, and anything else (already done) is counted
 * as such. The stock service never expires a mirrored hold itself: who expires is the shop.
 */
async function follow(
  tx: Tx,
  type: 'STOCK_CONFIRM_REQUESTED' | 'STOCK_HOLD_RELEASE_REQUESTED',
  p: RequestPayload,
  now: Date,
): Promise<StockAnswer> {
  let moved = 0;
  for (const line of p.lines) {
    const done =
      type === 'STOCK_CONFIRM_REQUESTED'
        ? await tryConfirm(tx, p.tenant_id, line.key, now)
        : (await tryRelease(tx, p.tenant_id, line.key, now)) || (await tryUnconfirm(tx, p.tenant_id, line.key, now));
    if (done) moved++;
  }
  return type === 'STOCK_CONFIRM_REQUESTED'
    ? { type: 'STOCK_CONFIRMED', payload: { confirmed: moved } }
    : { type: 'STOCK_HOLD_RELEASED', payload: { released: moved } };
}

/** Every request's inbox row marked applied with its answer, and the answer in the outbox, in batch order: two statements. */
async function recordAnswers(
  tx: Tx,
  rows: ReadonlyArray<{ request_key: string; order_id: string }>,
  answers: readonly StockAnswer[],
  now: Date,
  apart: boolean,
): Promise<void> {
  if (rows.length === 0) return;
  const payloads = rows.map((r, i) => {
    const a = answers[i] as StockAnswer;
    const mirror = apart && a.type === 'STOCK_RESERVED' ? { mirror: true } : {};
    return JSON.stringify({ request_key: r.request_key, ...a.payload, ...mirror });
  });
  const params = [rows.map((r) => r.request_key), answers.map((a) => a.type), payloads, now];
  await tx.query(
    `UPDATE stock_inbox i SET applied_at = $4, result_type = a.t, result = a.p::jsonb
     FROM unnest($1::text[], $2::text[], $3::text[]) AS a(k, t, p) WHERE i.request_key = a.k`,
    params,
  );
  await tx.query(
    `INSERT INTO stock_outbox (request_key, order_id, event_type, payload, created_at)
     SELECT a.k, a.o, a.t, a.p::jsonb, $5 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS a(k, o, t, p, n)
     ORDER BY a.n`,
    [rows.map((r) => r.request_key), rows.map((r) => r.order_id), answers.map((a) => a.type), payloads, now],
  );
}

/**
 * One batch, one transaction: the oldest unapplied requests in arrival order, each applied and its
 * result written to the outbox beside the inbox row that says it was applied. A crash before the
 * commit leaves all of the batch unapplied; after it, none is applied again. Returns how many were applied
 * (0 when another process is applying right now).
 */
export async function applyStockBatch(
  db: Db,
  now: Date,
  limit = STOCK_BATCH,
  options: ApplyOptions = {},
): Promise<number> {
  return inTx(db, async (tx) => {
    const turn = await tx.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [APPLIER_LOCK]);
    if (!turn.rows[0]?.ok) return 0;
    // Definitions first: a SKU's definition leaves before any hold of it granted after the change.
    if (options.apart) await publishSkuChanges(tx, now);
    const todo = await tx.query<{ request_key: string; order_id: string; event_type: string; payload: RequestPayload }>(
      `SELECT request_key, order_id, event_type, payload FROM stock_inbox WHERE applied_at IS NULL AND parked_at IS NULL ORDER BY seq LIMIT $1`,
      [limit],
    );
    const apart = options.apart === true;
    const deductions = todo.rows.map((r) => (r.event_type === 'STOCK_DEDUCTION_REQUESTED' ? r.payload : undefined));
    const setBased = await setBasedDeductions(tx, deductions);
    // Arrival order: a run of set-based deductions is decided before the request after it, and
    // each request the one-request path takes sees every run before it.
    const answers: StockAnswer[] = [];
    let run: RequestPayload[] = [];
    const flush = async () => {
      if (run.length > 0) answers.push(...(await deductRun(tx, run, now, apart)));
      run = [];
    };
    for (const [i, r] of todo.rows.entries()) {
      if (setBased.has(i)) {
        run.push(r.payload);
        continue;
      }
      await flush();
      const result =
        r.event_type === 'STOCK_DEDUCTION_REQUESTED'
          ? await deduct(tx, r.payload, now)
          : r.event_type === 'STOCK_RELEASE_REQUESTED'
            ? await release(tx, r.payload, now)
            : await follow(tx, r.event_type as 'STOCK_CONFIRM_REQUESTED', r.payload, now);
      // Split databases: the shop alone expires (its mirror carries the expiry); here the hold
      // never lapses, so no sweep or operator's early expiry can release it behind the shop's back.
      if (apart && result.type === 'STOCK_RESERVED')
        await tx.query(
          `UPDATE reservations SET expires_at = 'infinity' WHERE tenant_id = $1 AND request_key = ANY($2) AND status = 'HELD'`,
          [r.payload.tenant_id, r.payload.lines.map((l) => l.key)],
        );
      answers.push(result);
    }
    await flush();
    await recordAnswers(tx, todo.rows, answers, now, apart);
    // The whole batch written, nothing committed: the kill -9 window of MP-04.
    if (todo.rows.length > 0) await faultPoint('stock.batch.before-commit', { batch: todo.rows.length });
    return todo.rows.length;
  });
}
