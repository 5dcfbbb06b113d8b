import { request, type CrashTarget } from './crash-drivers.ts';

// The crash matrix's checker (tests/faults/crash-matrix.test.ts), apart so that its control
// (tests/faults/crash-invariants.test.ts, CI-01..05) can plant each kind of damage on a real
// database and see it named (issue 55): a checker that names nothing passes every crash.

/** What every crash must leave behind, whatever the point. */
export async function invariants(t: CrashTarget, orders: string[]): Promise<string[]> {
  const wrong: string[] = [];
  const counters = await t.sql<{ sku: string; ok: boolean }>(
    `SELECT s.sku, s.total = s.available + s.held + s.confirmed
       AND s.held = (SELECT coalesce(sum(quantity), 0) FROM reservations r WHERE r.tenant_id = s.tenant_id AND r.sku = s.sku AND r.status = 'HELD')
       AND s.confirmed = (SELECT coalesce(sum(quantity), 0) FROM reservations r WHERE r.tenant_id = s.tenant_id AND r.sku = s.sku AND r.status = 'CONFIRMED') AS ok
     FROM sku_counters s`,
  );
  for (const c of counters) if (!c.ok) wrong.push(`${c.sku}: counters not conserved`);
  const statement = (await request(t.channel, 'GET', '/statement')).body as {
    lines: Array<{ type: string; merchant_order: string; amount: number }>;
  };
  const rows = await t.sql<{ order_id: string; status: string; amount: string }>(
    'SELECT order_id, status, amount FROM orders WHERE order_id = ANY($1)',
    [orders],
  );
  const wallet = await t.sql<{ order_id: string }>(
    `SELECT DISTINCT order_id FROM wallet_transfers WHERE order_id = ANY($1)`,
    [orders],
  );
  for (const o of rows) {
    const lines = statement.lines.filter((l) => l.merchant_order === o.order_id);
    const charges = lines.filter((l) => l.type === 'CHARGE').length;
    const refunds = lines.filter((l) => l.type === 'REFUND').length;
    if (charges > 1 || refunds > 1) wrong.push(`${o.order_id}: ${charges} charges, ${refunds} refunds`);
    const card = !wallet.some((w) => w.order_id === o.order_id);
    if (card && o.status === 'PAID' && (charges !== 1 || refunds !== 0))
      wrong.push(`${o.order_id}: PAID, ${charges}/${refunds}`);
    if (o.status !== 'PAID' && charges !== refunds) wrong.push(`${o.order_id}: ${o.status} with an unrefunded charge`);
  }
  const twice = await t.sql<{ order_id: string; event_type: string; n: number }>(
    `SELECT order_id, event_type, count(*)::int AS n FROM outbox WHERE order_id = ANY($1) GROUP BY 1, 2 HAVING count(*) > 1`,
    [orders],
  );
  for (const e of twice) wrong.push(`${e.order_id}: ${e.n} ${e.event_type} events`);
  const applied = await t.sql<{ event_id: string; n: number }>(
    `SELECT event_id, count(*)::int AS n FROM ful_received WHERE order_id = ANY($1) AND effect = 'APPLIED' GROUP BY 1 HAVING count(*) > 1`,
    [orders],
  );
  for (const e of applied) wrong.push(`event ${e.event_id} applied ${e.n} times`);
  const shipped = await t.sql<{ order_id: string }>(
    'SELECT order_id FROM fulfillment WHERE order_id = ANY($1) AND ship_count > 1',
    [orders],
  );
  for (const s of shipped) wrong.push(`${s.order_id}: shipped twice`);
  return wrong;
}
