import { businessMetrics } from '../platform/business-metrics.ts';
import { inTx, type Db, type Tx } from '../platform/db.ts';
import { checkEventIntegrity } from './reconcile.events.ts';
import type { ChannelClient, StatementLine } from '../payments/index.ts';
import {
  countConfirmedReservations,
  listOrdersWithReservationPage,
  listStockDrift,
  ORDER_PAGE_SIZE,
  type OrderRow,
} from './reconcile.repo.ts';
import { mergeLedgers, readWalletFacts } from './reconcile.wallet.ts';
import { listStockDisagreements } from './reconcile.queued.ts';
import { classify, PENDING_STATUSES, type LedgerView, type MismatchClass } from './reconcile.rules.ts';
import { COMPENSATION_STATUSES } from '../orders/index.ts';

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
  totals: { channel_net: number; wallet_net: number; paid_sum: number; confirmed: number; paid: number; drift: number };
  events: {
    paid_without_event: number;
    terminal_without_event: number;
    duplicate_shipments: number;
    shipped_without_paid: number;
    pending: number;
    dead: number;
  };
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

/**
 * A tenant's share of the provider's statement: the lines of its own orders. A line for an order
 * nobody has cannot be told apart from another tenant's, so PROVIDER_RECORD_WITHOUT_ORDER is an
 * operator's finding only.
 */
function tenantStatement(
  statement: { lines: StatementLine[]; net: number },
  ownOrders: Set<string>,
): { lines: StatementLine[]; net: number } {
  const lines = statement.lines.filter((line) => ownOrders.has(line.merchant_order));
  return { lines, net: lines.reduce((net, line) => net + (line.type === 'CHARGE' ? line.amount : -line.amount), 0) };
}

const GLOBAL = 'GLOBAL';
const NO_LINES: LedgerView = { charges: 0, charged: 0, refunds: 0, refunded: 0 };
// Each read is one full scan; far above what the tables of one sale need, well below "hung".
const SNAPSHOT_STATEMENT_TIMEOUT_MS = 120_000;

/**
 * Every database fact from one REPEATABLE READ snapshot, the orders read in keyset pages (a
 * bounded result per statement). Read on separate pooled connections, a
 * PAID that commits between "count CONFIRMED" and "list orders" shows confirmed != paid out of
 * nothing under ordinary traffic (tests/reconcile/live.test.ts). Read-only: it cannot fail to serialize.
 */
function readDatabaseFacts(db: Db, tenantId: string | undefined) {
  return inTx(
    db,
    async (tx: Tx) => {
      const orders: OrderRow[] = [];
      for (let after: string | null = null; ;) {
        const page = await listOrdersWithReservationPage(tx, tenantId, after);
        orders.push(...page);
        if (page.length < ORDER_PAGE_SIZE) break;
        after = page[page.length - 1]?.order_id ?? null;
      }
      return {
        orders,
        confirmed: await countConfirmedReservations(tx, tenantId),
        stockDrift: await listStockDrift(tx, tenantId),
        integrity: await checkEventIntegrity(tx, tenantId),
        wallet: await readWalletFacts(tx, tenantId),
        stockDisagreements: await listStockDisagreements(tx, tenantId),
      };
    },
    { isolation: 'REPEATABLE READ', statementTimeoutMs: SNAPSHOT_STATEMENT_TIMEOUT_MS },
  );
}

/**
 * The three-way reconciliation of seed 000: the provider's ledger (read as a provider is read:
 * its statement), the orders, and the reservations, order by order; then the global checks and
 * the event-integrity checks that the three-way match alone cannot see (C29-19).
 */
export async function reconcile(db: Db, channel: ChannelClient, tenantId?: string): Promise<ReconciliationReport> {
  // The provider's statement cannot share the snapshot: rules across the two are judged on a quiet system.
  const [fullStatement, { orders, confirmed, stockDrift, integrity, wallet, stockDisagreements }, fulfilled] =
    await Promise.all([channel.statement(), readDatabaseFacts(db, tenantId), channel.fulfilled?.()]);
  const statement =
    tenantId === undefined ? fullStatement : tenantStatement(fullStatement, new Set(orders.map((o) => o.order_id)));
  const ledger = ledgerByOrder(statement.lines);
  // Wallet-paid orders are judged by the same rules, with their wallet transfers as the provider's lines.
  const walletNet = mergeLedgers(ledger, wallet.byOrder);
  const mismatches: Mismatch[] = [];
  const statuses: Record<string, number> = {};
  const pendingOrders: Array<{ order_id: string; status: string }> = [];
  let paid = 0;
  let paidSum = 0;
  // A PAID order of n lines owns n CONFIRMED reservations; an order being compensated still holds
  // its confirmed units (released only at the end).
  let paidLines = 0;
  let compensatingLines = 0;
  for (const order of orders) {
    statuses[order.status] = (statuses[order.status] ?? 0) + 1;
    if (order.status === 'PAID') {
      paid++;
      paidLines += order.lines;
      paidSum += order.amount;
    }
    if (COMPENSATION_STATUSES.has(order.status)) compensatingLines += order.lines;
    if (PENDING_STATUSES.has(order.status) || COMPENSATION_STATUSES.has(order.status))
      pendingOrders.push({ order_id: order.order_id, status: order.status });
    const saga = {
      fulfilment: order.fulfilment,
      sagaLate: order.saga_late,
      ...(fulfilled ? { providerFulfilled: fulfilled.has(order.order_id) } : {}),
    };
    for (const m of classify({
      status: order.status,
      amount: order.amount,
      reservation: order.reservation,
      ledger: ledger.get(order.order_id) ?? NO_LINES,
      ...saga,
    })) {
      mismatches.push({ order_id: order.order_id, status: order.status, ...m });
    }
  }
  const known = new Set(orders.map((o) => o.order_id));
  for (const mo of ledger.keys())
    if (!known.has(mo))
      mismatches.push({
        order_id: mo,
        status: null,
        class: 'PROVIDER_RECORD_WITHOUT_ORDER',
        detail: 'the provider has lines for an order we do not have',
      });
  if (confirmed !== paidLines + compensatingLines) {
    const detail = `confirmed=${confirmed} != paid=${paidLines}${compensatingLines ? ` + compensating=${compensatingLines}` : ''}${paidLines !== paid ? ' (lines)' : ''}`;
    mismatches.push({ order_id: GLOBAL, status: null, class: 'CONFIRMED_NE_PAID', detail });
  }
  for (const s of stockDrift)
    mismatches.push({
      order_id: GLOBAL,
      status: null,
      class: 'STOCK_NOT_CONSERVED',
      detail: `${s.tenant_id}/${s.sku}: ${s.detail}`,
    });
  // While an order is unfinished, money may legitimately be in flight: compare net only when none is.
  if (pendingOrders.length === 0 && statement.net + walletNet !== paidSum) {
    mismatches.push({
      order_id: GLOBAL,
      status: null,
      class: 'CHANNEL_NET_NE_PAID_SUM',
      detail: `channel_net=${statement.net}${walletNet ? ` + wallet_net=${walletNet}` : ''} != paid_sum=${paidSum}`,
    });
  }
  for (const a of wallet.drift)
    mismatches.push({
      order_id: GLOBAL,
      status: null,
      class: 'WALLET_BALANCE_NE_TRANSFERS',
      detail: `${a.tenant_id}/${a.account_id}: balance=${a.balance} != transfers=${a.net}`,
    });
  for (const t of wallet.unbalanced)
    mismatches.push({
      order_id: GLOBAL,
      status: null,
      class: 'LEDGER_NOT_ZERO',
      detail: `${t.tenant_id}: accounts sum to ${t.sum}`,
    });
  for (const id of integrity.paid_without_event_ids)
    mismatches.push({
      order_id: id,
      status: 'PAID',
      class: 'PAID_WITHOUT_EVENT',
      detail: 'PAID order without an ORDER_PAID outbox event',
    });
  for (const t of integrity.terminal_without_event_ids)
    mismatches.push({
      order_id: t.order_id,
      status: t.status,
      class: 'TERMINAL_WITHOUT_EVENT',
      detail: `${t.status} order without an ORDER_${t.status} outbox event`,
    });
  if (integrity.duplicate_shipments > 0)
    mismatches.push({
      order_id: GLOBAL,
      status: null,
      class: 'DUPLICATE_SHIPMENT',
      detail: `${integrity.duplicate_shipments} orders shipped more than once`,
    });
  for (const s of integrity.shipped_without_paid_ids)
    mismatches.push({
      order_id: s.order_id,
      status: s.status,
      class: 'SHIPPED_WITHOUT_PAID',
      detail: `shipped, but the order ${s.status === null ? 'does not exist' : `never was PAID (now ${s.status})`}`,
    });
  for (const d of stockDisagreements)
    mismatches.push({ order_id: d.order_id, status: d.status, class: 'STOCK_RESULT_DISAGREES', detail: d.detail });
  if (integrity.dead > 0)
    mismatches.push({
      order_id: GLOBAL,
      status: null,
      class: 'DEAD_EVENT',
      detail: `${integrity.dead} outbox events parked as dead`,
    });
  if (tenantId === undefined) businessMetrics.mismatches.set(mismatches.length);
  return {
    ok: mismatches.length === 0 && pendingOrders.length === 0 && integrity.pending === 0,
    pending: pendingOrders.length,
    pending_orders: pendingOrders,
    mismatches,
    statuses,
    totals: {
      channel_net: statement.net,
      wallet_net: walletNet,
      paid_sum: paidSum,
      confirmed,
      paid,
      drift: statement.net + walletNet - paidSum,
    },
    events: {
      paid_without_event: integrity.paid_without_event,
      terminal_without_event: integrity.terminal_without_event,
      duplicate_shipments: integrity.duplicate_shipments,
      shipped_without_paid: integrity.shipped_without_paid,
      pending: integrity.pending,
      dead: integrity.dead,
    },
  };
}

/** The seed's one-line summary: `classes={…} mismatches=0 pending=0 channel_net=… …`. */
export function summaryLine(report: ReconciliationReport): string {
  const classes = Object.entries(report.statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const t = report.totals;
  return `reconcile classes={${classes}} mismatches=${report.mismatches.length} pending=${report.pending} channel_net=${t.channel_net}${t.wallet_net ? ` wallet_net=${t.wallet_net}` : ''} paid_sum=${t.paid_sum} confirmed=${t.confirmed} paid=${t.paid} drift=${t.drift} events_pending=${report.events.pending} dead=${report.events.dead}`;
}
