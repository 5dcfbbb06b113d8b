import type { ReconciliationReport } from '../reconcile/index.ts';

// Against a live stack (`flashpay sim --api`) other tenants' and earlier runs' orders share the
// reconciliation: the sim judges only the orders it made, and prints the global report labelled
// as such, never as its verdict.

export type SimScope = 'own' | 'all';

/** The report narrowed to `mine`: its mismatches and pending orders, and the verdict on them. */
export function ownPart(report: ReconciliationReport, mine: ReadonlySet<string>): ReconciliationReport {
  const mismatches = report.mismatches.filter((m) => mine.has(m.order_id));
  const pendingOrders = report.pending_orders.filter((p) => mine.has(p.order_id));
  return {
    ...report,
    mismatches,
    pending_orders: pendingOrders,
    pending: pendingOrders.length,
    ok: mismatches.length === 0 && pendingOrders.length === 0,
  };
}

export function ownLine(own: ReconciliationReport, orders: number): string {
  return `note reconcile (this run's ${orders} orders) mismatches=${own.mismatches.length} pending=${own.pending}`;
}

export function globalLine(report: ReconciliationReport): string {
  return `note global reconciliation (every order on the stack, not judged) ok=${report.ok} mismatches=${report.mismatches.length} pending=${report.pending} events_pending=${report.events.pending} dead=${report.events.dead}`;
}
