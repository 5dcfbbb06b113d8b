import { inTx, type Db, type Tx } from '../platform/db.ts';
import { reviewContradictions } from './reconcile.review.ts';
import type { ChannelClient, StatementLine } from '../payments/index.ts';
import { listOrdersWithReservationPage, ORDER_PAGE_SIZE, type OrderRow } from './reconcile.repo.ts';
import type { LedgerView } from './reconcile.rules.ts';
import {
  addTerms,
  emptyTotals,
  finishReport,
  isPending,
  judgeOrder,
  NO_LINES,
  recordWithoutOrder,
  type Mismatch,
  type ReconciliationReport,
  type Totals,
} from './reconcile.report.ts';
import {
  ledgerByOrder,
  readAllOrders,
  readGlobalFacts,
  reconcile,
  SNAPSHOT_STATEMENT_TIMEOUT_MS,
} from './reconcile.service.ts';
import {
  changedOrderIds,
  clearState,
  currentSnapshot,
  lockCursor,
  openOrderIds,
  readState,
  saveCursor,
  writeState,
  type CursorRow,
  type StateRow,
} from './reconcile.cursor.repo.ts';
import { linkOrderTraces } from '../outbox/index.ts';
import { withRootSpan } from '../platform/tracing.ts';

// One page of the provider's statement per request: bounded, however long the ledger.
export const STATEMENT_PAGE_SIZE = 1_000;

const addViews = (a: LedgerView, b: LedgerView | undefined): LedgerView =>
  b
    ? {
        charges: a.charges + b.charges,
        charged: a.charged + b.charged,
        refunds: a.refunds + b.refunds,
        refunded: a.refunded + b.refunded,
      }
    : a;
const hasLines = (v: LedgerView) => v.charges + v.refunds > 0;

/** Every page of the statement after `after`, until a short page: the new lines and the cursor after them. */
type StatementPager = NonNullable<ChannelClient['statementPage']>;

async function readNewLines(statementPage: StatementPager, after: string | null) {
  const lines: StatementLine[] = [];
  let net = 0;
  let cursor = after;
  for (;;) {
    const page = await statementPage(cursor, STATEMENT_PAGE_SIZE);
    lines.push(...page.lines);
    net += page.net;
    cursor = page.next;
    if (page.lines.length < STATEMENT_PAGE_SIZE) return { lines, net, next: cursor ?? '0' };
  }
}

/** Every id a keyset-paged reader yields. */
async function collect(read: (after: string) => Promise<string[]>, into: Set<string>): Promise<void> {
  for (let after = ''; ;) {
    const page = await read(after);
    for (const id of page) into.add(id);
    if (page.length < ORDER_PAGE_SIZE) return;
    after = page[page.length - 1] ?? after;
  }
}

interface PassResult {
  report: ReconciliationReport;
}

/**
 * One pass over the orders in `ids` (every order on a full pass): folds the new provider lines
 * into each order's stored view, moves the running totals from what the order counted as last
 * time to what it is now, judges it, and stores what it counts as now (open while pending or
 * mismatched, so the next pass checks it again).
 */
async function pass(tx: Tx, channel: ChannelClient, statementPage: StatementPager, full: boolean): Promise<PassResult> {
  const cursor = await lockCursor(tx);
  const snapshot = await currentSnapshot(tx);
  const rebuild = full || cursor.orders_snapshot === null;
  // Our side first, then the provider: a pay's line commits at the provider before its PAID here,
  // so the statement read after our snapshot has every line our snapshot's orders are judged by.
  const ids = new Set<string>();
  let orders: OrderRow[] = [];
  if (rebuild) orders = await readAllOrders(tx, undefined);
  else {
    const since = cursor.orders_snapshot as string;
    await collect((after) => changedOrderIds(tx, since, after, ORDER_PAGE_SIZE), ids);
    await collect((after) => openOrderIds(tx, after, ORDER_PAGE_SIZE), ids);
  }
  const statement = await readNewLines(statementPage, rebuild ? null : cursor.statement_after);
  const delta = ledgerByOrder(statement.lines);
  for (const id of delta.keys()) ids.add(id);
  if (!rebuild) {
    const sorted = [...ids].sort();
    for (let i = 0; i < sorted.length; i += ORDER_PAGE_SIZE)
      orders.push(
        ...(await listOrdersWithReservationPage(
          tx,
          undefined,
          null,
          ORDER_PAGE_SIZE,
          sorted.slice(i, i + ORDER_PAGE_SIZE),
        )),
      );
  } else for (const o of orders) ids.add(o.order_id);
  const [facts, fulfilled] = [await readGlobalFacts(tx, undefined), await channel.fulfilled?.()];
  if (rebuild) await clearState(tx);
  const totals: Totals = rebuild ? emptyTotals() : structuredClone(cursor.totals);
  const byId = new Map(orders.map((o) => [o.order_id, o]));
  const orderMismatches: Mismatch[] = [];
  const pendingOrders: Array<{ order_id: string; status: string }> = [];
  const all = [...ids].sort();
  for (let i = 0; i < all.length; i += ORDER_PAGE_SIZE) {
    const chunk = all.slice(i, i + ORDER_PAGE_SIZE);
    const before = rebuild ? new Map<string, StateRow>() : await readState(tx, chunk);
    const rows: StateRow[] = [];
    const drop: string[] = [];
    for (const id of chunk) {
      const prev = before.get(id);
      const order = byId.get(id);
      if (prev?.status) addTerms(totals, { status: prev.status, amount: prev.amount, lines: prev.lines }, -1);
      const ledger = addViews(prev ?? NO_LINES, delta.get(id));
      const stored = {
        charges: ledger.charges,
        charged: ledger.charged,
        refunds: ledger.refunds,
        refunded: ledger.refunded,
      };
      if (!order) {
        // Lines for an order we do not have (or an order gone): a finding every pass until explained.
        if (!hasLines(ledger)) {
          drop.push(id);
          continue;
        }
        orderMismatches.push(recordWithoutOrder(id));
        rows.push({ order_id: id, status: null, amount: 0, lines: 0, ...stored, open: true });
        continue;
      }
      addTerms(totals, order, 1);
      const pending = isPending(order.status);
      if (pending) pendingOrders.push({ order_id: id, status: order.status });
      // Wallet-paid orders are judged with their wallet transfers as the provider's lines.
      const found = judgeOrder(order, addViews(ledger, facts.wallet.byOrder.get(id)), fulfilled);
      orderMismatches.push(...found);
      rows.push({
        order_id: id,
        status: order.status,
        amount: order.amount,
        lines: order.lines,
        ...stored,
        open: pending || found.length > 0,
      });
    }
    await writeState(tx, rows, drop);
  }
  let walletNet = 0;
  for (const w of facts.wallet.byOrder.values()) walletNet += w.charged - w.refunded;
  const channelNet = (rebuild ? 0 : cursor.channel_net) + statement.net;
  const report = finishReport({
    orderMismatches,
    pendingOrders,
    totals,
    channelNet,
    walletNet,
    facts,
    tenantId: undefined,
  });
  await saveCursor(tx, cursor, { statementAfter: statement.next, snapshot, channelNet, totals, full: rebuild });
  const scanned = { orders: orders.length, statement_lines: statement.lines.length };
  const drift = rebuild && cursor.orders_snapshot !== null ? stateDrift(cursor, channelNet, totals) : [];
  return {
    report: {
      ...report,
      pass: rebuild ? 'full' : 'incremental',
      scanned,
      ...(drift.length > 0 ? { state_drift: drift } : {}),
    },
  };
}

/** What a rebuild found the incremental totals had wrong (it cannot tell changes since the last pass apart). */
function stateDrift(before: CursorRow, channelNet: number, after: Totals): string[] {
  const out: string[] = [];
  const cmp = (name: string, was: number, is: number) => {
    if (was !== is) out.push(`${name}: incremental=${was} full=${is}`);
  };
  cmp('channel_net', before.channel_net, channelNet);
  cmp('paid_sum', before.totals.paid_sum, after.paid_sum);
  cmp('paid', before.totals.paid, after.paid);
  return out;
}

/**
 * The operator's reconciliation from a cursor of what changed (docs/reconciliation.md,
 * "Incremental passes"): the provider's statement after the stored cursor, the orders whose
 * transitions committed since the stored snapshot, and the orders left open — in bounded pages —
 * against running totals kept in the database. `full` (or no state yet) reads everything and
 * rebuilds the state. One REPEATABLE READ transaction: the cursor is committed with exactly what
 * it covers; a crash before the commit re-reads the same changes next time.
 */
export function reconcilePass(
  db: Db,
  channel: ChannelClient,
  options: { full?: boolean } = {},
): Promise<ReconciliationReport> {
  // A trace of its own (issue 53), linked to the orders it found wrong.
  return withRootSpan('reconciliation pass', async (span) => {
    const report = await incrementalPass(db, channel, options);
    span?.setAttribute('flashpay.mismatches', report.mismatches.length);
    if (span)
      await linkOrderTraces(
        db,
        report.mismatches.map((m) => m.order_id),
      );
    return report;
  });
}

async function incrementalPass(
  db: Db,
  channel: ChannelClient,
  options: { full?: boolean },
): Promise<ReconciliationReport> {
  const { statementPage } = channel;
  // A provider without a statement cursor: only the full, stateless pass is possible.
  if (!statementPage) return reconcile(db, channel);
  const pager: StatementPager = (after, limit) => statementPage.call(channel, after, limit);
  const result = await inTx(db, (tx) => pass(tx, channel, pager, options.full === true), {
    isolation: 'REPEATABLE READ',
    statementTimeoutMs: SNAPSHOT_STATEMENT_TIMEOUT_MS,
    // A second pass waits for the first's cursor (see lockCursor), then starts over.
    lockTimeoutMs: SNAPSHOT_STATEMENT_TIMEOUT_MS,
    retries: 5,
  });
  return reviewContradictions(db, channel, result.report);
}
