import { inTx, type Db, type Tx } from '../../platform/db.ts';
import type { OrderEvent } from '../decide/decider.ts';
import { applyOrderEvents } from '../apply/many.ts';
import type { AppliedEvent } from '../apply/one.ts';
import { receiveStockResult, type ResultEffect, type StockResult } from './results.ts';

// The shop's result inbox, a batch at a time (issue 16, P7): what receiveStockResult does for one
// result, for a whole relay pass in ONE transaction — the inbox rows in one statement, the orders
// decided by applyOrderEvents (orders and reservations locked in one statement each, transitions
// written set-based), one commit. Results that need more than the decider (a split database's
// mirror, acknowledgements, SKU definitions) keep the one-result path, in their place in the
// sequence, so the order in which results take effect is the order they were published in.

// Orders per applyOrderEvents call, all in the run's one transaction. Its matching was quadratic
// (a pass of 1,000 went as five groups of 200); it is linear now, and a pass is one group: P7's
// reserved/s 4,618 → 5,594 in one run (docs/benchmarks/journal.md §11).
const GROUP = 1_000;

/** A result the set-based path takes: it only moves an order through the decider. */
function plainEvent(r: StockResult): OrderEvent | undefined {
  if (r.event_type === 'STOCK_RESERVED' && r.payload.mirror !== true) return { type: 'STOCK_RESERVED' };
  if (r.event_type === 'STOCK_REJECTED')
    return { type: 'STOCK_REJECTED', reason: String(r.payload.reason ?? 'SOLD_OUT') };
  if (r.event_type === 'STOCK_RELEASED') return { type: 'STOCK_RELEASED' };
  return undefined;
}

/**
 * Every result of `results` applied once, in sequence; answers in input order. A run of plain
 * results (each order at most once in a run, so a later result for the same order sees the first
 * one's effect) is one transaction; anything else goes through receiveStockResult on its own.
 */
export async function receiveStockResults(db: Db, results: readonly StockResult[], now: Date): Promise<ResultEffect[]> {
  const effects = new Array<ResultEffect>(results.length);
  let i = 0;
  while (i < results.length) {
    const first = results[i] as StockResult;
    if (!plainEvent(first)) {
      effects[i] = await receiveStockResult(db, first, now);
      i++;
      continue;
    }
    const end = runEnd(results, i);
    const done = await applyRun(db, results.slice(i, end), now);
    done.forEach((effect, k) => (effects[i + k] = effect));
    i = end;
  }
  return effects;
}

/** Where the run of plain results starting at `start` ends: each order once, so a later result for one sees the first's effect. */
function runEnd(results: readonly StockResult[], start: number): number {
  const orders = new Set<string>();
  let i = start;
  for (let r = results[i]; r && plainEvent(r) && !orders.has(r.order_id); r = results[++i]) orders.add(r.order_id);
  return i;
}

/**
 * Every one of `results` applied once, in sequence, in the caller's transaction (a delivery that
 * commits with its sender's mark, both sides in one database); answers in input order. Undefined,
 * with nothing done, when one of them needs more than the decider (receiveStockResults' one-result
 * path, which has transactions of its own).
 */
export async function receiveStockResultsIn(
  tx: Tx,
  results: readonly StockResult[],
  now: Date,
): Promise<ResultEffect[] | undefined> {
  if (!results.every(plainEvent)) return undefined;
  const effects: ResultEffect[] = [];
  for (let i = 0, end = 0; i < results.length; i = end) {
    end = runEnd(results, i);
    effects.push(...(await applyRunIn(tx, results.slice(i, end), now)));
  }
  return effects;
}

async function applyRun(db: Db, run: readonly StockResult[], now: Date): Promise<ResultEffect[]> {
  // Pipelined: applyOrderEvents sends its locking reads together, and its writes.
  return inTx(db, (tx) => applyRunIn(tx, run, now), { pipeline: true });
}

async function applyRunIn(tx: Tx, run: readonly StockResult[], now: Date): Promise<ResultEffect[]> {
  const inserted = await tx.query<{ event_id: string }>(
    `INSERT INTO stock_results_in (event_id, order_id, event_type, effect, received_at)
     SELECT e, o, t, 'APPLIED', $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS r(e, o, t)
     ON CONFLICT (event_id) DO NOTHING RETURNING event_id`,
    [run.map((r) => r.event_id), run.map((r) => r.order_id), run.map((r) => r.event_type), now],
  );
  const fresh = new Set(inserted.rows.map((r) => r.event_id));
  const todo = run.filter((r) => fresh.has(r.event_id));
  const applied: AppliedEvent[] = [];
  for (let k = 0; k < todo.length; k += GROUP)
    applied.push(
      ...(await applyOrderEvents(
        tx,
        todo.slice(k, k + GROUP).map((r) => ({ orderId: r.order_id, event: plainEvent(r) as OrderEvent })),
        now,
      )),
    );
  const byEvent = new Map<string, ResultEffect>();
  const notes: Array<{ id: string; effect: ResultEffect; detail: string | null }> = [];
  todo.forEach((r, k) => {
    const a = applied[k];
    const effect: ResultEffect =
      !a || a.outcome === 'UNKNOWN_ORDER' ? 'UNKNOWN_ORDER' : a.decision?.to ? 'APPLIED' : 'IGNORED';
    byEvent.set(r.event_id, effect);
    if (effect !== 'APPLIED') notes.push({ id: r.event_id, effect, detail: a?.decision?.reason ?? null });
  });
  if (notes.length > 0)
    await tx.query(
      `UPDATE stock_results_in i SET effect = n.effect, detail = n.detail
       FROM unnest($1::text[], $2::text[], $3::text[]) AS n(id, effect, detail) WHERE i.event_id = n.id`,
      [notes.map((n) => n.id), notes.map((n) => n.effect), notes.map((n) => n.detail)],
    );
  return run.map((r) => byEvent.get(r.event_id) ?? 'DUPLICATE');
}
