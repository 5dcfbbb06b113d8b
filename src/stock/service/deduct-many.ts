import type { Tx } from '../../platform/db.ts';
import { invariant } from '../../platform/errors.ts';

// The stock service's deductions, set-based (issue 16, P7). A run of consecutive deduction
// requests whose SKUs have no per-user limit and whose line keys hold nothing yet is decided in
// arrival order on SKU rows locked once for the run (one SELECT … ORDER BY tenant_id, sku FOR
// UPDATE, lock order 3), and written in one statement: each SKU's counters once for the run's sum,
// every granted line's reservation. The decision is the one the request-by-request path makes:
// every line of a request or none, in line order, the first line that does not fit names the SKU.

export interface RequestLine {
  line_no: number;
  sku: string;
  quantity: number;
  key: string;
}

export interface RequestPayload {
  tenant_id: string;
  user_id: string;
  lines: RequestLine[];
}

export interface StockAnswer {
  type: string;
  payload: Record<string, unknown>;
}

const skuId = (tenant: string, sku: string) => `${tenant}\u0000${sku}`;
const byLine = (p: RequestPayload) => [...p.lines].sort((a, b) => a.line_no - b.line_no);

/**
 * Which deductions the set-based path may take: every line on a SKU without a per-user limit (a
 * limit needs the holding rows, lock order 4: the one-request path) and no line key reserved before
 * (a replayed key answers with its reservation: the one-request path). Reads without locks; the
 * decision itself is taken on the locked rows.
 */
export async function setBasedDeductions(
  tx: Tx,
  payloads: ReadonlyArray<RequestPayload | undefined>,
): Promise<Set<number>> {
  const lines = payloads.flatMap((p) => (p ? p.lines.map((l) => ({ tenant: p.tenant_id, ...l })) : []));
  if (lines.length === 0) return new Set();
  const limited = await tx.query<{ tenant_id: string; sku: string }>(
    `SELECT tenant_id, sku FROM skus s WHERE per_user_limit IS NOT NULL
       AND (tenant_id, sku) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [lines.map((l) => l.tenant), lines.map((l) => l.sku)],
  );
  const known = await tx.query<{ tenant_id: string; request_key: string }>(
    `SELECT tenant_id, request_key FROM reservations
     WHERE (tenant_id, request_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [lines.map((l) => l.tenant), lines.map((l) => l.key)],
  );
  const limitedSkus = new Set(limited.rows.map((r) => skuId(r.tenant_id, r.sku)));
  const knownKeys = new Set(known.rows.map((r) => skuId(r.tenant_id, r.request_key)));
  // A key twice in one batch (never from the shop, whose keys are its orders' line keys): the second must find the first.
  const seen = new Map<string, number>();
  for (const l of lines) seen.set(skuId(l.tenant, l.key), (seen.get(skuId(l.tenant, l.key)) ?? 0) + 1);
  const fresh = (tenant: string, key: string) =>
    !knownKeys.has(skuId(tenant, key)) && seen.get(skuId(tenant, key)) === 1;
  const out = new Set<number>();
  payloads.forEach((p, i) => {
    if (
      p &&
      p.lines.length > 0 &&
      p.lines.every((l) => !limitedSkus.has(skuId(p.tenant_id, l.sku)) && fresh(p.tenant_id, l.key))
    )
      out.add(i);
  });
  return out;
}

/**
 * A run of set-based deductions, in arrival order, in the caller's transaction; one answer per
 * request. `apart`: the hold is stored as never lapsing (the shop's mirror expires it), its real
 * expiry travels in the answer, as the request-by-request path does.
 */
export async function deductRun(
  tx: Tx,
  run: readonly RequestPayload[],
  now: Date,
  apart: boolean,
): Promise<StockAnswer[]> {
  const wanted = run.flatMap((p) => p.lines.map((l) => ({ tenant: p.tenant_id, sku: l.sku })));
  const locked = await tx.query<{ tenant_id: string; sku: string; available: number; hold_ttl_ms: number }>(
    `SELECT tenant_id, sku, available, hold_ttl_ms FROM skus
     WHERE (tenant_id, sku) IN (SELECT * FROM unnest($1::text[], $2::text[]))
     ORDER BY tenant_id, sku FOR UPDATE`,
    [wanted.map((w) => w.tenant), wanted.map((w) => w.sku)],
  );
  const left = new Map(locked.rows.map((r) => [skuId(r.tenant_id, r.sku), r.available]));
  const ttl = new Map(locked.rows.map((r) => [skuId(r.tenant_id, r.sku), r.hold_ttl_ms]));
  const taken = new Map<string, { tenant: string; sku: string; units: number }>();
  const holds: Array<{ tenant: string; key: string; user: string; sku: string; quantity: number; expires: Date }> = [];
  const answers = run.map((p): StockAnswer => {
    const lines = byLine(p);
    const want = new Map<string, number>();
    for (const line of lines) {
      const id = skuId(p.tenant_id, line.sku);
      const units = (want.get(id) ?? 0) + line.quantity;
      // A SKU that does not exist has nothing to give: SOLD_OUT, as its conditional decrement says.
      if (units > (left.get(id) ?? 0))
        return { type: 'STOCK_REJECTED', payload: { reason: 'SOLD_OUT', sku: line.sku } };
      want.set(id, units);
    }
    for (const [id, units] of want) {
      left.set(id, (left.get(id) ?? 0) - units);
      const t = taken.get(id);
      if (t) t.units += units;
      else taken.set(id, { tenant: p.tenant_id, sku: id.split('\u0000')[1] as string, units });
    }
    const granted = lines.map((l) => ({
      tenant: p.tenant_id,
      key: l.key,
      user: p.user_id,
      sku: l.sku,
      quantity: l.quantity,
      expires: new Date(now.getTime() + (ttl.get(skuId(p.tenant_id, l.sku)) ?? 0)),
    }));
    holds.push(...granted);
    return {
      type: 'STOCK_RESERVED',
      payload: {
        holds: granted.map((h) => ({
          key: h.key,
          sku: h.sku,
          quantity: h.quantity,
          expires_at: h.expires.toISOString(),
        })),
      },
    };
  });
  if (holds.length > 0) await writeRun(tx, [...taken.values()], holds, now, apart);
  return answers;
}

async function writeRun(
  tx: Tx,
  taken: ReadonlyArray<{ tenant: string; sku: string; units: number }>,
  holds: ReadonlyArray<{ tenant: string; key: string; user: string; sku: string; quantity: number; expires: Date }>,
  now: Date,
  apart: boolean,
): Promise<void> {
  // The SKU rows are ours since the SELECT … FOR UPDATE; the guard only proves it.
  const written = await tx.query<{ skus: number; holds: number }>(
    `WITH t AS (
       UPDATE skus s SET available = s.available - t.units, held = s.held + t.units
       FROM unnest($1::text[], $2::text[], $3::int[]) AS t(tenant, sku, units)
       WHERE s.tenant_id = t.tenant AND s.sku = t.sku AND s.available >= t.units RETURNING 1),
     h AS (
       INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
       SELECT h.tenant, h.key, h.usr, h.sku, h.quantity, 'HELD', CASE WHEN $10 THEN 'infinity' ELSE h.expires END, $9, $9
       FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $11::timestamptz[]) AS h(tenant, key, usr, sku, quantity, expires)
       RETURNING 1)
     SELECT (SELECT count(*) FROM t)::int AS skus, (SELECT count(*) FROM h)::int AS holds`,
    [
      taken.map((t) => t.tenant),
      taken.map((t) => t.sku),
      taken.map((t) => t.units),
      holds.map((h) => h.tenant),
      holds.map((h) => h.key),
      holds.map((h) => h.user),
      holds.map((h) => h.sku),
      holds.map((h) => h.quantity),
      now,
      apart,
      holds.map((h) => h.expires),
    ],
  );
  const row = written.rows[0];
  invariant(
    row?.skus === taken.length && row.holds === holds.length,
    `set-based deduction wrote ${row?.skus} of ${taken.length} SKU rows and ${row?.holds} of ${holds.length} holds`,
  );
}
