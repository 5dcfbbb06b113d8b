import { expect } from 'vitest';
import { waitFor } from '../support/poll.ts';
import { launchTarget, type Target } from './attacker.ts';

// The tenant both security files attack: acme with a paid order, an order whose 1 ms hold is
// over, and one dead event (so the dead-letter routes have something to leak); evil, a second
// tenant with its own admin; an operator. Each file launches its own `flashpay start`.
export const ACME = 'acme';
export const EVIL = 'evil';

export interface Acme {
  t: Target;
  acmeAdmin: string;
  evilAdmin: string;
  operator: string;
  alice: string;
  paidOrder: string;
  expiredOrder: string;
  order(token: string, key: string, body: unknown): ReturnType<Target['call']>;
  /** Runs the attack and proves the database and the provider's ledger are as before. */
  unchanged(attack: () => Promise<void>): Promise<void>;
}

export async function launchAcme(): Promise<Acme> {
  const t = await launchTarget();
  const [acmeAdmin, evilAdmin, operator, alice] = await Promise.all([
    t.token(ACME, 'ops', 'admin'),
    t.token(EVIL, 'ops', 'admin'),
    t.token('ops-tenant', 'root', 'operator'),
    t.token(ACME, 'alice'),
  ]);
  const order = async (token: string, key: string, body: unknown) =>
    t.call('POST', '/v1/orders', { token, body, headers: { 'idempotency-key': key } });
  for (const body of [
    { sku: 'tee', name: 'Tee', price: 1990, stock: 5 },
    { sku: 'quick', name: 'Quick', price: 500, stock: 5, hold_ttl_ms: 1 },
  ])
    expect((await t.call('POST', '/v1/admin/skus', { token: acmeAdmin, body })).status).toBe(201);
  const paidOrder = (await order(alice, 'buy-1', { sku: 'tee' })).body.order_id as string;
  expect(
    (await t.call('POST', `/v1/orders/${paidOrder}/pay`, { token: alice, headers: { 'idempotency-key': 'pay-1' } }))
      .body.status,
  ).toBe('PAID');
  // The provider's notification of that charge arrives on its own time: wait for it, so that no
  // attack's before/after snapshot sees it land.
  await waitFor(
    async () =>
      (
        await t.db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM payment_notifications WHERE merchant_order = $1',
          [paidOrder],
        )
      ).rows[0]!.n > 0 || undefined,
    'the notification of the paid order',
    30_000,
    50,
  );
  const expiredOrder = (await order(alice, 'buy-2', { sku: 'quick' })).body.order_id as string;
  await t.db.pool.query(`UPDATE outbox SET dead_at = now() WHERE order_id = $1`, [paidOrder]);
  const unchanged = async (attack: () => Promise<void>) => {
    const before = await t.snapshot();
    await attack();
    expect(await t.snapshot()).toBe(before);
  };
  return { t, acmeAdmin, evilAdmin, operator, alice, paidOrder, expiredOrder, order, unchanged };
}
