import { businessMetrics } from '../platform/business-metrics.ts';
import { inTx, type Db, type Tx } from '../platform/db.ts';
import { checkEventIntegrity } from '../outbox/integrity.ts';
import type { ChannelClient, StatementLine } from '../payments/channel.client.ts';
import { countConfirmedReservations, listOrdersWithReservationPage, listStockDrift, ORDER_PAGE_SIZE, type OrderRow } from './reconcile.repo.ts';
import { classify, PENDING_STATUSES, type LedgerView, type MismatchClass } from './reconcile.rules.ts';

export interface Mismatch {
  order_id: string;
  status: string | null;
  class: MismatchClass;
  detail: string;
}

export interface ReconciliationReport {
  ok: boolean;
  pending: number;
  pending_orders: Array<{ order_id: string; status: string }>;
  mismatches: Mismatch[];
  statuses: Record<string, number>;
  totals: { channel_net: number; paid_sum: number; confirmed: number; paid: number; drift: number };
  events: { paid_without_event: number; terminal_without_event: number; duplicate_shipments: number; pending: number; dead: number };
}

function ledgerByOrder(lines: StatementLine[]): Map<string, LedgerView> {
  const byOrder = new Map<string, LedgerView>();
  for (const line of lines) {
    const view = byOrder.get(line.merchant_order) ?? { charges: 0, charged: 0, refunds: 0, refunded: 0 };
    if (line.type === 'CHARGE') {
      view.charges++;
      view.charged += line.amount;
    } else {
      view.refunds++;
      view.refunded += line.amount;
    }
    byOrder.set(line.merchant_order, view);
  }
  return byOrder;
}

const GLOBAL = 'GLOBAL';
const NO_LINES: LedgerView = { charges: 0, charged: 0, refunds: 0, refunded: 0 };
// Each read is one full scan; far above what the tables of one sale need, well below "hung".
const SNAPSHOT_STATEMENT_TIMEOUT_MS = 120_000;

interface OrderTally {
  mismatches: Mismatch[];
  statuses: Record<string, number>;
  pendingOrders: Array<{ order_id: string; status: string }>;
  paid: number;
  paidSum: number;
  /** Provider orders not matched by any of ours yet; what is left at the end has no order. */
  unmatched: Set<string>;
}

/** Judges one page of orders against the provider's ledger; pure, so a page never holds a lock longer. */
function tallyPage(tally: OrderTally, page: OrderRow[], ledger: Map<string, LedgerView>): void {
  for (const order of page) {
    tally.unmatched.delete(order.order_id);
    tally.statuses[order.status] = (tally.statuses[order.status] ?? 0) + 1;
    if (order.status === 'PAID') {
      tally.paid++;
      tally.paidSum += order.amount;
    }
    if (PENDING_STATUSES.has(order.status)) tally.pendingOrders.push({ order_id: order.order_id, status: order.status });
    for (const m of classify({ status: order.status, amount: order.amount, reservation: order.reservation, ledger: ledger.get(order.order_id) ?? NO_LINES })) {
      tally.mismatches.push({ order_id: order.order_id, status: order.status, ...m });
    }
  }
}

/**
 * Every database fact from one REPEATABLE READ snapshot, the orders read in keyset pages (a
 * bounded result per statement) and judged page by page. Read on separate pooled connections, a
 * PAID that commits between "count CONFIRMED" and "list orders" shows confirmed != paid out of
 * nothing under ordinary traffic (tests/reconcile/live.test.ts). Read-only: it cannot fail to serialize.
 */
function readDatabaseFacts(db: Db, ledger: Map<string, LedgerView>) {
  return inTx(
    db,
    async (tx: Tx) => {
      const tally: OrderTally = { mismatches: [], statuses: {}, pendingOrders: [], paid: 0, paidSum: 0, unmatched: new Set(ledger.keys()) };
      for (let after: string | null = null; ; ) {
        const page = await listOrdersWithReservationPage(tx, after);
        tallyPage(tally, page, ledger);
        if (page.length < ORDER_PAGE_SIZE) break;
        after = page[page.length - 1]?.order_id ?? null;
      }
      return { tally, confirmed: await countConfirmedReservations(tx), stockDrift: await listStockDrift(tx), integrity: await checkEventIntegrity(tx) };
    },
    { isolation: 'REPEATABLE READ', statementTimeoutMs: SNAPSHOT_STATEMENT_TIMEOUT_MS },
  );
}

/**
 * The three-way reconciliation of seed 000: the provider's ledger (read as a provider is read:
 * its statement), the orders, and the reservations, order by order; then the global checks and
 * the event-integrity checks that the three-way match alone cannot see (C29-19).
 */
export async function reconcile(db: Db, channel: ChannelClient): Promise<ReconciliationReport> {
  // The provider's statement cannot share the snapshot: rules across the two are judged on a quiet system.
  const statement = await channel.statement();
  const ledger = ledgerByOrder(statement.lines);
  const { tally, confirmed, stockDrift, integrity } = await readDatabaseFacts(db, ledger);
  const { mismatches, statuses, pendingOrders, paid, paidSum } = tally;
  for (const mo of tally.unmatched) mismatches.push({ order_id: mo, status: null, class: 'PROVIDER_RECORD_WITHOUT_ORDER', detail: 'the provider has lines for an order we do not have' });
  if (confirmed !== paid) mismatches.push({ order_id: GLOBAL, status: null, class: 'CONFIRMED_NE_PAID', detail: `confirmed=${confirmed} != paid=${paid}` });
  for (const s of stockDrift) mismatches.push({ order_id: GLOBAL, status: null, class: 'STOCK_NOT_CONSERVED', detail: `${s.tenant_id}/${s.sku}: ${s.detail}` });
  // While an order is unfinished, money may legitimately be in flight: compare net only when none is.
  if (pendingOrders.length === 0 && statement.net !== paidSum) {
    mismatches.push({ order_id: GLOBAL, status: null, class: 'CHANNEL_NET_NE_PAID_SUM', detail: `channel_net=${statement.net} != paid_sum=${paidSum}` });
  }
  for (const id of integrity.paid_without_event_ids) mismatches.push({ order_id: id, status: 'PAID', class: 'PAID_WITHOUT_EVENT', detail: 'PAID order without an ORDER_PAID outbox event' });
  for (const t of integrity.terminal_without_event_ids) mismatches.push({ order_id: t.order_id, status: t.status, class: 'TERMINAL_WITHOUT_EVENT', detail: `${t.status} order without an ORDER_${t.status} outbox event` });
  if (integrity.duplicate_shipments > 0) mismatches.push({ order_id: GLOBAL, status: null, class: 'DUPLICATE_SHIPMENT', detail: `${integrity.duplicate_shipments} orders shipped more than once` });
  if (integrity.dead > 0) mismatches.push({ order_id: GLOBAL, status: null, class: 'DEAD_EVENT', detail: `${integrity.dead} outbox events parked as dead` });
  businessMetrics.mismatches.set(mismatches.length);
  return {
    ok: mismatches.length === 0 && pendingOrders.length === 0 && integrity.pending === 0,
    pending: pendingOrders.length,
    pending_orders: pendingOrders,
    mismatches,
    statuses,
    totals: { channel_net: statement.net, paid_sum: paidSum, confirmed, paid, drift: statement.net - paidSum },
    events: { paid_without_event: integrity.paid_without_event, terminal_without_event: integrity.terminal_without_event, duplicate_shipments: integrity.duplicate_shipments, pending: integrity.pending, dead: integrity.dead },
  };
}

/** The seed's one-line summary: `classes={…} mismatches=0 pending=0 channel_net=… …`. */
export function summaryLine(report: ReconciliationReport): string {
  const classes = Object.entries(report.statuses).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(', ');
  const t = report.totals;
  return `reconcile classes={${classes}} mismatches=${report.mismatches.length} pending=${report.pending} channel_net=${t.channel_net} paid_sum=${t.paid_sum} confirmed=${t.confirmed} paid=${t.paid} drift=${t.drift} events_pending=${report.events.pending} dead=${report.events.dead}`;
}
