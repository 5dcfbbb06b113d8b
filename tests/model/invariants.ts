// After a run: let the system converge (notifications delivered, recovery, outbox drained) and
// check every invariant against the database and the provider's ledger, then the model's own
// expectations. A violation throws with every finding, so fast-check prints them with the seed.
import { channelClient } from '../../src/payments/channel.client.ts';
import { reconcile } from '../../src/reconcile/reconcile.service.ts';
import { EVENT_STATUSES } from '../../src/orders/decide/states.ts';
import { deliver, settleNotifications } from './commands.ts';
import type { Model, Run } from './model.ts';
import { PAY_TIMEOUT_MS } from './world.ts';

type Report = Awaited<ReturnType<typeof reconcile>>;

/** Delivers every held notification of the run, then recovery + drain until reconciliation is clean. */
export async function converge(run: Run, model: Model): Promise<Report> {
  let report: Report | undefined;
  for (let pass = 0; pass < 30; pass++) {
    await deliver(run, model);
    await run.world.recover();
    await run.world.drain();
    await settleNotifications(run, new Set(model.orders.map((o) => o.id)));
    report = await reconcile(run.world.db.pool, channelClient(run.world.channel.url, PAY_TIMEOUT_MS * 4), run.tenant);
    if (report.ok && report.pending === 0) return report;
    // A charge request still delayed at the provider (DELAY_REQUEST) lands within its delay.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return report as Report;
}

export async function invariantViolations(run: Run, model: Model): Promise<string[]> {
  const report = await converge(run, model);
  const db = run.world.db.pool;
  const wrong: string[] = [];
  if (!report.ok || report.pending !== 0)
    wrong.push(
      `reconciliation not clean: ${JSON.stringify({ mismatches: report.mismatches, pending: report.pending_orders })}`,
    );

  // Counters conserved and backed by the reservations; no unit sold that no PAID order owns.
  const skus = await db.query<{
    sku: string;
    total: number;
    available: number;
    held: number;
    confirmed: number;
    r_held: number;
    r_confirmed: number;
    paid_units: number;
  }>(
    `SELECT s.sku, s.total, s.available, s.held, s.confirmed,
       (SELECT coalesce(sum(quantity), 0)::int FROM reservations r WHERE r.tenant_id = s.tenant_id AND r.sku = s.sku AND r.status = 'HELD') AS r_held,
       (SELECT coalesce(sum(quantity), 0)::int FROM reservations r WHERE r.tenant_id = s.tenant_id AND r.sku = s.sku AND r.status = 'CONFIRMED') AS r_confirmed,
       (SELECT coalesce(sum(l.quantity), 0)::int FROM order_lines l JOIN orders o USING (order_id)
          WHERE l.tenant_id = s.tenant_id AND l.sku = s.sku AND o.status = 'PAID') AS paid_units
     FROM sku_counters s WHERE s.tenant_id = $1`,
    [run.tenant],
  );
  for (const s of skus.rows) {
    if (s.total !== s.available + s.held + s.confirmed)
      wrong.push(`${s.sku}: counters not conserved ${JSON.stringify(s)}`);
    if (s.held !== s.r_held || s.confirmed !== s.r_confirmed)
      wrong.push(`${s.sku}: counters != reservations ${JSON.stringify(s)}`);
    if (s.confirmed !== s.paid_units)
      wrong.push(`${s.sku}: confirmed ${s.confirmed} != units of PAID orders ${s.paid_units}`);
    if (s.confirmed + s.held > s.total) wrong.push(`${s.sku}: oversold ${JSON.stringify(s)}`);
  }

  const orders = await db.query<{ order_id: string; status: string; amount: string; ship_count: number | null }>(
    `SELECT o.order_id, o.status, o.amount, f.ship_count FROM orders o LEFT JOIN fulfillment f USING (order_id)
     WHERE o.tenant_id = $1`,
    [run.tenant],
  );
  const statement = (await run.world.control('GET', '/statement')) as {
    lines: Array<{ type: string; merchant_order: string; amount: number }>;
  };
  const events = await db.query<{ order_id: string; event_type: string; n: number }>(
    `SELECT order_id, event_type, count(*)::int AS n FROM outbox WHERE order_id = ANY($1) GROUP BY 1, 2`,
    [orders.rows.map((o) => o.order_id)],
  );
  const entered = await db.query<{ order_id: string; to_status: string; n: number }>(
    `SELECT order_id, to_status, count(*)::int AS n FROM order_transitions WHERE order_id = ANY($1) GROUP BY 1, 2`,
    [orders.rows.map((o) => o.order_id)],
  );
  const count = (rows: Array<{ order_id: string; n: number }>, id: string, pick: (r: never) => boolean) =>
    rows.filter((r) => r.order_id === id && pick(r as never)).reduce((sum, r) => sum + r.n, 0);

  for (const o of orders.rows) {
    const lines = statement.lines.filter((l) => l.merchant_order === o.order_id);
    const charges = lines.filter((l) => l.type === 'CHARGE').length;
    const refunds = lines.filter((l) => l.type === 'REFUND').length;
    const net = lines.reduce((sum, l) => sum + (l.type === 'CHARGE' ? Math.abs(l.amount) : -Math.abs(l.amount)), 0);
    const amount = Number(o.amount);
    if (charges > 1) wrong.push(`${o.order_id}: charged ${charges} times`);
    if (o.status === 'PAID' && (net !== amount || refunds !== 0))
      wrong.push(`${o.order_id}: PAID but provider net ${net} (amount ${amount}), ${refunds} refunds`);
    if (o.status !== 'PAID' && (net !== 0 || refunds !== charges))
      wrong.push(`${o.order_id}: ${o.status} with provider net ${net}, ${charges} charges, ${refunds} refunds`);
    for (const status of EVENT_STATUSES) {
      const emitted = count(events.rows, o.order_id, (r: { event_type: string }) => r.event_type === `ORDER_${status}`);
      const times = count(entered.rows, o.order_id, (r: { to_status: string }) => r.to_status === status);
      if (emitted !== times || emitted > 1) wrong.push(`${o.order_id}: entered ${status} ${times}x, ${emitted} events`);
      if (o.status === status && emitted !== 1) wrong.push(`${o.order_id}: terminal ${status} with ${emitted} events`);
    }
    if ((o.ship_count ?? 0) > 1) wrong.push(`${o.order_id}: shipped ${o.ship_count} times`);
    if (o.status === 'PAID' && o.ship_count !== 1)
      wrong.push(`${o.order_id}: PAID, shipped ${o.ship_count ?? 0} times`);
  }

  // What the model knows: the answers a client got must stand.
  const status = new Map(orders.rows.map((o) => [o.order_id, o.status]));
  for (const m of model.orders) {
    const now = status.get(m.id);
    if (now === undefined) wrong.push(`${m.id}: answered 201, not in the database`);
    if (m.paid && now !== 'PAID') wrong.push(`${m.id}: answered PAID, now ${now}`);
    if (m.declined && now !== 'FAILED') wrong.push(`${m.id}: declined, now ${now}`);
    if (m.cancelled && now !== 'CANCELLED') wrong.push(`${m.id}: answered CANCELLED, now ${now}`);
  }
  return wrong;
}
