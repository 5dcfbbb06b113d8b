import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimAbandonedCreated, claimUnfinished } from '../../src/orders/index.ts';
import { inTx } from '../../src/platform/db.ts';
import { createSku, TENANT } from '../support/fixtures.ts';
import { startStack, type Stack } from '../support/stack.ts';

// What recovery claims, in a database that looks like the day after a sale: live holds, a released
// history, and the few orders that are really abandoned or unfinished among them. Both claims were
// rewritten to read indexes and sets (migration 140, docs/benchmarks/journal.md §13); these pin that they
// still take exactly the right orders, oldest first.

const OTHER = 'rc-other-tenant';
const NOW = new Date('2026-12-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW.getTime() - ms);

describe('recovery claims on a database with history', () => {
  let stack: Stack;
  const sql = (text: string, values: unknown[] = []) => stack.db.pool.query(text, values);

  /** Orders with one reservation each: `${prefix}${i}` (order) and `${prefix}k${i}` (reservation). */
  async function orders(
    prefix: string,
    n: number,
    o: { tenant?: string; status: string; hold: string; expiresAt: Date; at: (i: number) => Date },
  ): Promise<string[]> {
    const tenant = o.tenant ?? TENANT;
    const ids = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    const ats = ids.map((_, i) => o.at(i).toISOString());
    await sql(
      `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
       SELECT $1, id || 'k', 'u', 'rc-sku', 1, $2, $3, at::timestamptz, at::timestamptz FROM unnest($4::text[], $5::text[]) AS x(id, at)`,
      [tenant, o.hold, o.expiresAt, ids, ats],
    );
    await sql(
      `INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
       SELECT id, $1, 'u', 'rc-sku', 1, 100, $2, 1, id || 'k', at::timestamptz, at::timestamptz FROM unnest($3::text[], $4::text[]) AS x(id, at)`,
      [tenant, o.status, ids, ats],
    );
    return ids;
  }

  /** A two-line CREATED order: line 1 on the order's own reservation, line 2 on its own key. */
  async function twoLines(id: string, first: string, second: string, at: Date): Promise<void> {
    const later = new Date(NOW.getTime() + 600_000);
    for (const [key, status] of [
      [`${id}k`, first],
      [`${id}k2`, second],
    ] as const)
      await sql(
        `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
         VALUES ($1, $2, 'u', 'rc-sku', 1, $3, $4, $5, $5)`,
        [TENANT, key, status, later, at],
      );
    await sql(
      `INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
       VALUES ($1, $2, 'u', 'rc-sku', 2, 200, 'CREATED', 1, $1 || 'k', $3, $3)`,
      [id, TENANT, at],
    );
    await sql(
      `INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount, reservation_key)
       VALUES ($1, 1, $2, 'rc-sku', 'n', 100, 1, 100, NULL), ($1, 2, $2, 'rc-sku2', 'n', 100, 1, 100, $1 || 'k2')`,
      [id, TENANT],
    );
  }

  const abandoned: string[] = [];
  const unfinished: string[] = [];
  beforeAll(async () => {
    stack = await startStack();
    await createSku(stack, { sku: 'rc-sku', stock: 1 });
    await createSku(stack, { sku: 'rc-sku2', stock: 1 });
    await createSku(stack, { sku: 'rc-sku', stock: 1 }, OTHER);
    const live = new Date(NOW.getTime() + 600_000);
    const past = ago(60_000);
    // The noise: live holds, and a history of released and confirmed units with finished orders.
    await orders('rc-live-', 600, { status: 'CREATED', hold: 'HELD', expiresAt: live, at: (i) => ago(120_000 - i) });
    await orders('rc-cancelled-', 400, { status: 'CANCELLED', hold: 'RELEASED', expiresAt: past, at: () => ago(9e6) });
    await orders('rc-paid-', 400, { status: 'PAID', hold: 'CONFIRMED', expiresAt: past, at: () => ago(9e6) });
    await orders('rc-failed-', 50, { status: 'FAILED', hold: 'HELD', expiresAt: past, at: () => ago(9e6) });
    // Abandoned: CREATED with the unit released, or held past its expiry, or a second line released.
    abandoned.push(
      ...(await orders('rc-released-', 6, {
        status: 'CREATED',
        hold: 'RELEASED',
        expiresAt: past,
        at: (i) => ago(900_000 - i),
      })),
      ...(await orders('rc-expired-', 6, {
        status: 'CREATED',
        hold: 'HELD',
        expiresAt: past,
        at: (i) => ago(800_000 - i),
      })),
    );
    for (let i = 0; i < 3; i++) await twoLines(`rc-line2-${i}`, 'HELD', 'RELEASED', ago(700_000 - i));
    abandoned.push('rc-line2-0', 'rc-line2-1', 'rc-line2-2');
    for (let i = 0; i < 3; i++) await twoLines(`rc-both-held-${i}`, 'HELD', 'HELD', ago(700_000 - i));
    // Another tenant's abandoned order.
    await orders('rc-other-', 2, {
      tenant: OTHER,
      status: 'CREATED',
      hold: 'RELEASED',
      expiresAt: past,
      at: () => ago(950_000),
    });
    // Unfinished for the provider: UNKNOWN, REFUNDING and stale PAYING; not a fresh PAYING, nor the
    // orders waiting for the stock service.
    unfinished.push(
      ...(await orders('rc-unknown-', 5, {
        status: 'UNKNOWN',
        hold: 'HELD',
        expiresAt: live,
        at: (i) => ago(500_000 - i),
      })),
      ...(await orders('rc-refunding-', 2, {
        status: 'REFUNDING',
        hold: 'RELEASED',
        expiresAt: past,
        at: (i) => ago(400_000 - i),
      })),
      ...(await orders('rc-stale-paying-', 3, {
        status: 'PAYING',
        hold: 'HELD',
        expiresAt: live,
        at: (i) => ago(300_000 - i),
      })),
    );
    await orders('rc-fresh-paying-', 3, { status: 'PAYING', hold: 'HELD', expiresAt: live, at: () => ago(1_000) });
    await orders('rc-pending-', 3, { status: 'PENDING', hold: 'HELD', expiresAt: live, at: () => ago(600_000) });
    await orders('rc-releasing-', 3, { status: 'RELEASING', hold: 'HELD', expiresAt: live, at: () => ago(600_000) });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('RC-01 the abandoned CREATED orders, and only those, oldest first; a tenant sees its own', async () => {
    const all = await inTx(stack.db.pool, (tx) => claimAbandonedCreated(tx, NOW));
    expect(all).toEqual(['rc-other-0', 'rc-other-1', ...abandoned]);
    const mine = await inTx(stack.db.pool, (tx) => claimAbandonedCreated(tx, NOW, TENANT));
    expect(mine).toEqual(abandoned);
    const theirs = await inTx(stack.db.pool, (tx) => claimAbandonedCreated(tx, NOW, OTHER));
    expect(theirs).toEqual(['rc-other-0', 'rc-other-1']);
  });

  it('RC-02 a claimed abandoned order is skipped by a second claimer while the first holds it', async () => {
    await inTx(stack.db.pool, async (first) => {
      const taken = await claimAbandonedCreated(first, NOW, TENANT);
      expect(taken).toHaveLength(abandoned.length);
      const second = await inTx(stack.db.pool, (tx) => claimAbandonedCreated(tx, NOW, TENANT));
      expect(second).toEqual([]);
    });
  });

  it('RC-03 the provider claim takes UNKNOWN, REFUNDING and stale PAYING, oldest first, and stamps them', async () => {
    const claimUntil = new Date(NOW.getTime() + 30_000);
    const taken = await inTx(stack.db.pool, (tx) => claimUnfinished(tx, NOW, ago(60_000), claimUntil, TENANT));
    expect(taken.map((c) => c.orderId)).toEqual(unfinished);
    const stamped = await sql(`SELECT count(*)::int AS n FROM orders WHERE recovery_claimed_until = $1`, [claimUntil]);
    expect(stamped.rows[0].n).toBe(unfinished.length);
    // Claimed: a second claimer before the claim expires gets none of them.
    const again = await inTx(stack.db.pool, (tx) => claimUnfinished(tx, NOW, ago(60_000), claimUntil, TENANT));
    expect(again).toEqual([]);
  });
});
