import { businessMetrics } from '../platform/business-metrics.ts';
import { mutant } from '../platform/mutations.ts';
import { COMPENSATION_STATUSES } from '../orders/index.ts';
import type { EventIntegrity } from './reconcile.events.ts';
import type { OrderRow } from './reconcile.repo.ts';
import type { WalletFacts } from './reconcile.wallet.ts';
import type { UnitDisagreement } from './reconcile.units.ts';
import { classify, PENDING_STATUSES, type LedgerView, type MismatchClass } from './reconcile.rules.ts';

// The report both passes build (the full one in reconcile.service.ts, the incremental one in
// reconcile.incremental.ts): per-order judgement, the running totals' terms, and the global checks.

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
    lines_disagree: number;
    pending: number;
    dead: number;
  };
  /** Which pass made it, and what it read: an incremental pass reads what changed, not the tables. */
  pass?: 'full' | 'incremental';
  scanned?: { orders: number; statement_lines: number };
  /** Orders whose provider contradicts itself (reconcile.review.ts); each got a note for a person. */
  review?: Array<{ order_id: string; class: string; query: string; detail: string }>;
  /** A full pass that rebuilt the incremental state: the running totals it found wrong (normally none). */
  state_drift?: string[];
}

export const NO_LINES: LedgerView = { charges: 0, charged: 0, refunds: 0, refunded: 0 };
const GLOBAL = 'GLOBAL';

/** The totals a pass keeps: each order adds its terms once (sign -1 takes an old count back). */
export interface Totals {
  statuses: Record<string, number>;
  paid: number;
  paid_sum: number;
  /** A PAID order of n lines owns n CONFIRMED reservations; one being compensated still holds its units. */
  paid_lines: number;
  compensating_lines: number;
}

export const emptyTotals = (): Totals => ({ statuses: {}, paid: 0, paid_sum: 0, paid_lines: 0, compensating_lines: 0 });

export function addTerms(totals: Totals, order: { status: string; amount: number; lines: number }, sign: 1 | -1): void {
  const n = (totals.statuses[order.status] ?? 0) + sign;
  if (n === 0) delete totals.statuses[order.status];
  else totals.statuses[order.status] = n;
  if (order.status === 'PAID') {
    totals.paid += sign;
    totals.paid_lines += sign * order.lines;
    totals.paid_sum += sign * order.amount;
  }
  if (COMPENSATION_STATUSES.has(order.status as never)) totals.compensating_lines += sign * order.lines;
}

export const isPending = (status: string): boolean =>
  PENDING_STATUSES.has(status as never) || COMPENSATION_STATUSES.has(status as never);

/** One order against its ledger view (provider lines and wallet transfers) and its reservations. */
export function judgeOrder(order: OrderRow, ledger: LedgerView, fulfilled: Set<string> | undefined): Mismatch[] {
  return classify({
    status: order.status,
    amount: order.amount,
    reservation: order.reservation,
    ledger,
    fulfilment: order.fulfilment,
    sagaLate: order.saga_late,
    ...(fulfilled ? { providerFulfilled: fulfilled.has(order.order_id) } : {}),
  }).map((m) => ({ order_id: order.order_id, status: order.status, ...m }));
}

export const recordWithoutOrder = (orderId: string): Mismatch => ({
  order_id: orderId,
  status: null,
  class: 'PROVIDER_RECORD_WITHOUT_ORDER',
  detail: 'the provider has lines for an order we do not have',
});

/** What both passes read in their snapshot besides the orders. */
export interface GlobalFacts {
  confirmed: number;
  stockDrift: Array<{ tenant_id: string; sku: string; detail: string }>;
  integrity: EventIntegrity;
  wallet: WalletFacts;
  stockDisagreements: Array<{ order_id: string; status: string; detail: string }>;
  /** Issue 48: SKUs whose shipped units break a units rule (reconcile.units.ts). */
  units?: UnitDisagreement[];
}

export interface ReportParts {
  orderMismatches: Mismatch[];
  pendingOrders: Array<{ order_id: string; status: string }>;
  totals: Totals;
  channelNet: number;
  walletNet: number;
  facts: GlobalFacts;
  tenantId: string | undefined;
}

/** The global checks the per-order match cannot see, then the report. */
export function finishReport(parts: ReportParts): ReconciliationReport {
  const { totals, channelNet, walletNet, pendingOrders, tenantId } = parts;
  const { confirmed, stockDrift, integrity, wallet, stockDisagreements } = parts.facts;
  const mismatches = [...parts.orderMismatches];
  const global = (c: MismatchClass, detail: string) =>
    mismatches.push({ order_id: GLOBAL, status: null, class: c, detail });
  if (confirmed !== totals.paid_lines + totals.compensating_lines) {
    const comp = totals.compensating_lines ? ` + compensating=${totals.compensating_lines}` : '';
    global(
      'CONFIRMED_NE_PAID',
      `confirmed=${confirmed} != paid=${totals.paid_lines}${comp}${totals.paid_lines !== totals.paid ? ' (lines)' : ''}`,
    );
  }
  for (const s of stockDrift) global('STOCK_NOT_CONSERVED', `${s.tenant_id}/${s.sku}: ${s.detail}`);
  for (const u of parts.facts.units ?? []) global(u.class, u.detail);
  // While an order is unfinished, money may legitimately be in flight: compare net only when none is.
  if (pendingOrders.length === 0 && channelNet + walletNet !== totals.paid_sum)
    global(
      'CHANNEL_NET_NE_PAID_SUM',
      `channel_net=${channelNet}${walletNet ? ` + wallet_net=${walletNet}` : ''} != paid_sum=${totals.paid_sum}`,
    );
  for (const a of wallet.drift)
    global('WALLET_BALANCE_NE_TRANSFERS', `${a.tenant_id}/${a.account_id}: balance=${a.balance} != transfers=${a.net}`);
  for (const t of wallet.unbalanced) global('LEDGER_NOT_ZERO', `${t.tenant_id}: accounts sum to ${t.sum}`);
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
    global('DUPLICATE_SHIPMENT', `${integrity.duplicate_shipments} orders shipped more than once`);
  for (const s of integrity.shipped_without_paid_ids)
    mismatches.push({
      order_id: s.order_id,
      status: s.status,
      class: 'SHIPPED_WITHOUT_PAID',
      detail: `shipped, but the order ${s.status === null ? 'does not exist' : `never was PAID (now ${s.status})`}`,
    });
  for (const l of integrity.lines_disagree_ids)
    mismatches.push({
      order_id: l.order_id,
      status: l.status,
      class: 'EVENT_LINES_DISAGREE',
      detail: 'an event or the shipment of this order names other lines than the order holds',
    });
  for (const d of stockDisagreements)
    mismatches.push({ order_id: d.order_id, status: d.status, class: 'STOCK_RESULT_DISAGREES', detail: d.detail });
  if (integrity.dead > 0) global('DEAD_EVENT', `${integrity.dead} outbox events parked as dead`);
  // Issue 55: a control switches one rule off (`reconcile.rule.<class>`, tests only) to show that
  // its planted damage then goes unnamed.
  const named = mismatches.filter((m) => !mutant(`reconcile.rule.${m.class}`));
  if (tenantId === undefined) businessMetrics.mismatches.set(named.length);
  return {
    ok: named.length === 0 && pendingOrders.length === 0 && integrity.pending === 0,
    pending: pendingOrders.length,
    pending_orders: pendingOrders,
    mismatches: named,
    statuses: totals.statuses,
    totals: {
      channel_net: channelNet,
      wallet_net: walletNet,
      paid_sum: totals.paid_sum,
      confirmed,
      paid: totals.paid,
      drift: channelNet + walletNet - totals.paid_sum,
    },
    events: {
      paid_without_event: integrity.paid_without_event,
      terminal_without_event: integrity.terminal_without_event,
      duplicate_shipments: integrity.duplicate_shipments,
      shipped_without_paid: integrity.shipped_without_paid,
      lines_disagree: integrity.lines_disagree,
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
  const scanned = report.scanned
    ? ` pass=${report.pass} scanned_orders=${report.scanned.orders} scanned_lines=${report.scanned.statement_lines}`
    : '';
  return `reconcile classes={${classes}} mismatches=${report.mismatches.length} pending=${report.pending} channel_net=${t.channel_net}${t.wallet_net ? ` wallet_net=${t.wallet_net}` : ''} paid_sum=${t.paid_sum} confirmed=${t.confirmed} paid=${t.paid} drift=${t.drift} events_pending=${report.events.pending} dead=${report.events.dead}${scanned}`;
}
