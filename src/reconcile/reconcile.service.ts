import { inTx, type Db, type Executor, type Tx } from '../platform/db.ts';
import { checkEventIntegrity } from './reconcile.events.ts';
import { statementOf, type ChannelClient, type StatementLine } from '../payments/index.ts';
import {
  countConfirmedReservations,
  listOrdersWithReservationPage,
  listStockDrift,
  ORDER_PAGE_SIZE,
  type OrderRow,
} from './reconcile.repo.ts';
import { mergeLedgers, readWalletFacts } from './reconcile.wallet.ts';
import { listStockDisagreements } from './reconcile.queued.ts';
import { listUnitDisagreements } from './reconcile.units.ts';
import { reviewContradictions } from './reconcile.review.ts';
import type { LedgerView } from './reconcile.rules.ts';
import {
  addTerms,
  emptyTotals,
  finishReport,
  isPending,
  judgeOrder,
  NO_LINES,
  recordWithoutOrder,
  type GlobalFacts,
  type Mismatch,
  type ReconciliationReport,
} from './reconcile.report.ts';
import { linkOrderTraces } from '../outbox/index.ts';
import { withRootSpan } from '../platform/tracing.ts';

export type { Mismatch, ReconciliationReport } from './reconcile.report.ts';
export { summaryLine } from './reconcile.report.ts';

/** Folds statement lines into per-order views (adding to `into` when given). */
export function ledgerByOrder(lines: StatementLine[], into = new Map<string, LedgerView>()): Map<string, LedgerView> {
  for (const line of lines) {
    const view = into.get(line.merchant_order) ?? { ...NO_LINES };
    if (line.type === 'CHARGE') {
      view.charges++;
      view.charged += line.amount;
    } else {
      view.refunds++;
      view.refunded += line.amount;
    }
    into.set(line.merchant_order, view);
  }
  return into;
}

/**
 * Lines are matched on (provider, order), issue 48: a line from another provider than the one the
 * order's payment was recorded at is not the order's money (a fake-channel CHARGE for a Stripe
 * order), so it is kept out of the order's ledger view and reported as CHARGE_AT_OTHER_PROVIDER.
 * A line or an order that names no provider (a single-provider statement read before lines carried
 * one, an order paid before migration 180) matches by order alone, as before.
 */
export function byProvider(
  lines: StatementLine[],
  orders: ReadonlyArray<{ order_id: string; status: string; provider: string | null }>,
): { own: StatementLine[]; elsewhere: Mismatch[] } {
  const recorded = new Map(orders.filter((o) => o.provider !== null).map((o) => [o.order_id, o]));
  const own: StatementLine[] = [];
  const elsewhere: Mismatch[] = [];
  for (const line of lines) {
    const order = recorded.get(line.merchant_order);
    if (!order || line.provider === undefined || line.provider === order.provider) own.push(line);
    else
      elsewhere.push({
        order_id: order.order_id,
        status: order.status as Mismatch['status'],
        class: 'CHARGE_AT_OTHER_PROVIDER',
        detail: `a ${line.type} of ${line.amount} at ${line.provider} (${line.ref}); the order's payment is at ${order.provider}`,
      });
  }
  return { own, elsewhere };
}

/**
 * A tenant's share of the provider's statement: the lines of its own orders. A line for an order
 * nobody has cannot be told apart from another tenant's, so PROVIDER_RECORD_WITHOUT_ORDER is an
 * operator's finding only.
 */
function tenantStatement(
  statement: { lines: StatementLine[]; net: number },
  ownOrders: Set<string>,
): { lines: StatementLine[]; net: number } {
  return statementOf(statement.lines.filter((line) => ownOrders.has(line.merchant_order)));
}

// Each read is one full scan; far above what the tables of one sale need, well below "hung".
export const SNAPSHOT_STATEMENT_TIMEOUT_MS = 120_000;

/** The facts besides the orders, read in the caller's snapshot (both passes). */
export async function readGlobalFacts(tx: Executor, tenantId: string | undefined): Promise<GlobalFacts> {
  return {
    confirmed: await countConfirmedReservations(tx, tenantId),
    stockDrift: await listStockDrift(tx, tenantId),
    integrity: await checkEventIntegrity(tx, tenantId),
    wallet: await readWalletFacts(tx, tenantId),
    stockDisagreements: await listStockDisagreements(tx, tenantId),
    units: await listUnitDisagreements(tx, tenantId),
  };
}

/** Every order, in keyset pages (a bounded result per statement, however large the table). */
export async function readAllOrders(tx: Executor, tenantId: string | undefined): Promise<OrderRow[]> {
  const orders: OrderRow[] = [];
  for (let after: string | null = null; ;) {
    const page = await listOrdersWithReservationPage(tx, tenantId, after);
    orders.push(...page);
    if (page.length < ORDER_PAGE_SIZE) return orders;
    after = page[page.length - 1]?.order_id ?? null;
  }
}

/**
 * Every database fact from one REPEATABLE READ snapshot. Read on separate pooled connections, a
 * PAID that commits between "count CONFIRMED" and "list orders" shows confirmed != paid out of
 * nothing under ordinary traffic (tests/reconcile/live.test.ts). Read-only: it cannot fail to serialize.
 */
function readDatabaseFacts(db: Db, tenantId: string | undefined) {
  return inTx(
    db,
    async (tx: Tx) => ({ orders: await readAllOrders(tx, tenantId), facts: await readGlobalFacts(tx, tenantId) }),
    { isolation: 'REPEATABLE READ', statementTimeoutMs: SNAPSHOT_STATEMENT_TIMEOUT_MS },
  );
}

/**
 * The full three-way reconciliation of seed 000: the provider's whole ledger (read as a provider is
 * read: its statement), every order, and the reservations, order by order; then the global checks
 * and the event-integrity checks that the three-way match alone cannot see (C29-19). The
 * incremental pass (reconcile.incremental.ts) reaches the same verdict from what changed.
 */
export function reconcile(db: Db, channel: ChannelClient, tenantId?: string): Promise<ReconciliationReport> {
  // A trace of its own (issue 53), linked to the orders it found wrong.
  return withRootSpan('reconciliation', async (span) => {
    const report = await reconcileNow(db, channel, tenantId);
    span?.setAttribute('flashpay.mismatches', report.mismatches.length);
    if (span)
      await linkOrderTraces(
        db,
        report.mismatches.map((m) => m.order_id),
      );
    return report;
  });
}

async function reconcileNow(db: Db, channel: ChannelClient, tenantId?: string): Promise<ReconciliationReport> {
  // The provider's statement cannot share the snapshot: rules across the two are judged on a quiet system.
  const [fullStatement, { orders, facts }, fulfilled] = await Promise.all([
    channel.statement(),
    readDatabaseFacts(db, tenantId),
    channel.fulfilled?.(),
  ]);
  const statement =
    tenantId === undefined ? fullStatement : tenantStatement(fullStatement, new Set(orders.map((o) => o.order_id)));
  const { own, elsewhere } = byProvider(statement.lines, orders);
  const ledger = ledgerByOrder(own);
  // Wallet-paid orders are judged by the same rules, with their wallet transfers as the provider's lines.
  const walletNet = mergeLedgers(ledger, facts.wallet.byOrder);
  const orderMismatches: Mismatch[] = [];
  const pendingOrders: Array<{ order_id: string; status: string }> = [];
  const totals = emptyTotals();
  for (const order of orders) {
    addTerms(totals, order, 1);
    if (isPending(order.status)) pendingOrders.push({ order_id: order.order_id, status: order.status });
    orderMismatches.push(...judgeOrder(order, ledger.get(order.order_id) ?? NO_LINES, fulfilled));
  }
  orderMismatches.push(...elsewhere);
  const known = new Set(orders.map((o) => o.order_id));
  for (const mo of ledger.keys()) if (!known.has(mo)) orderMismatches.push(recordWithoutOrder(mo));
  const report = finishReport({
    orderMismatches,
    pendingOrders,
    totals,
    channelNet: statement.net,
    walletNet,
    facts,
    tenantId,
  });
  const scanned = { orders: orders.length, statement_lines: statement.lines.length };
  return reviewContradictions(db, channel, { ...report, pass: 'full', scanned });
}
