// Issue 48's negative controls for the units rules (src/reconcile/reconcile.units.ts): each plants
// the one broken step a refund of a shipped order could take — its units put back on sale with no
// audited return — into a clean world, and the reconciliation must name it.
import { expect } from 'vitest';
import { tryReturnToStock } from '../../src/stock/reservations/finish.ts';
import { inTx } from '../../src/platform/db.ts';
import { TENANT, type PaymentStack } from '../support/payments.ts';
import { createSku } from '../support/fixtures.ts';
import { db, type Case } from './cases.support.ts';
import { drain, GLOBAL, PRICE } from './scenario.ts';

let keys = 0;

/** The real operator refund (reason, key) of an order whose fulfilment is FULFILLED. */
export async function refundShipped(s: PaymentStack, orderId: string): Promise<void> {
  const view = (await s.order(orderId)) as unknown as { fulfilment: { status: string } };
  expect(view.fulfilment.status).toBe('FULFILLED');
  const r = await s.call('POST', `/v1/admin/orders/${orderId}/refund`, {
    token: s.admin,
    headers: { 'idempotency-key': `units-refund-${++keys}` },
    body: { reason: 'units case: buyer keeps it' },
  });
  expect([r.status, r.body.status]).toEqual([200, 'REFUNDED']);
}

/**
 * The return's stock move without the return: REFUNDED_SHIPPED → RELEASED, no operator action
 * recorded. Exactly what a refund did before issue 48 (its units back on sale at once).
 */
export async function putBackWithoutReturn(s: PaymentStack, orderId: string): Promise<void> {
  const keys = await db(s).query<{ key: string }>(
    `SELECT reservation_key AS key FROM orders WHERE order_id = $1
     UNION SELECT reservation_key FROM order_lines WHERE order_id = $1 AND reservation_key IS NOT NULL`,
    [orderId],
  );
  await inTx(db(s), async (tx) => {
    for (const { key } of keys.rows) expect(await tryReturnToStock(tx, TENANT, key, s.clock.now())).toBe(true);
  });
}

/** A buyer pays for one unit of `sku` and the saga ships it. */
export async function payAndShip(s: PaymentStack, user: string, sku: string): Promise<string> {
  const { orderId, token } = await s.buy(user, sku);
  expect((await s.pay(token, orderId)).body.status).toBe('PAID');
  await s.recover();
  await drain(s);
  return orderId;
}

export const UNIT_CASES: Case[] = [
  {
    proves: 'SHIPPED_UNITS_EXCEED_TOTAL',
    title:
      'a refund of a shipped order that puts its unit back on sale lets the one unit of a SKU be sold and shipped again',
    async plant(s) {
      // The story: stock 1, alice's unit shipped and refunded, back on sale, bob's order ships it again.
      await createSku(s, { sku: 'rc-one', stock: 1, price: PRICE });
      const alice = await payAndShip(s, 'rc-alice', 'rc-one');
      await refundShipped(s, alice);
      await putBackWithoutReturn(s, alice);
      await payAndShip(s, 'rc-bob', 'rc-one');
      return [
        [GLOBAL, 'SHIPPED_UNITS_EXCEED_TOTAL', 'rc-one: shipped and not returned=2 > total=1'],
        [GLOBAL, 'REFUNDED_SHIPPED_NE_ORDERS', 'rc-one: refunded_shipped=0'],
      ];
    },
  },
  {
    proves: 'REFUNDED_SHIPPED_NE_ORDERS',
    title: 'a refund of a shipped order that puts its unit back on sale without an audited return',
    async plant(s, { paid }) {
      await refundShipped(s, paid.orderId);
      await putBackWithoutReturn(s, paid.orderId);
      return [
        [
          GLOBAL,
          'REFUNDED_SHIPPED_NE_ORDERS',
          'refunded_shipped=0, units of orders refunded after shipping and not returned=1',
        ],
      ];
    },
  },
];
