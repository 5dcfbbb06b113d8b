// Seed 002's reconciliation classes, each planted in the converged world of scenario.ts: the
// negative controls of a compensation runner that releases before refunding, that forgets the
// unit, that stalls past its deadline, and a fulfilment claimed without the provider's record.
import { expect } from 'vitest';
import { applyOrderEvent } from '../../src/orders/apply/one.ts';
import { transition } from '../../src/orders/orders.repo.ts';
import { tryUnconfirm } from '../../src/stock/reservations/finish.ts';
import { inTx } from '../../src/platform/db.ts';
import type { PaymentStack } from '../support/payments.ts';
import type { Case } from './cases.ts';
import { GLOBAL, refundAtChannel, SKU, statusOf } from './scenario.ts';

const db = (s: PaymentStack) => s.db.pool;

async function event(s: PaymentStack, orderId: string, e: Parameters<typeof applyOrderEvent>[2]): Promise<string> {
  return inTx(db(s), async (tx) => (await applyOrderEvent(tx, orderId, e, s.clock.now())).outcome);
}

export const SAGA_CASES: Case[] = [
  {
    proves: 'COMPENSATED_MONEY_KEPT',
    title:
      'a runner that releases before refunding (and never refunds) leaves a COMPENSATED order whose money was kept',
    async plant(s, { paid }) {
      expect(await event(s, paid.orderId, { type: 'FULFILMENT_REFUSED', cause: 'plant' })).toBe('COMPENSATING');
      expect(await event(s, paid.orderId, { type: 'COMPENSATION_RELEASE' })).toBe('COMPENSATED'); // the refund step skipped
      return [
        [paid.orderId, 'COMPENSATED_MONEY_KEPT'],
        [GLOBAL, 'CHANNEL_NET_NE_PAID_SUM'],
      ];
    },
  },
  {
    proves: 'COMPENSATED_UNITS_HELD',
    title: 'a compensation that refunds but forgets the unit leaves a COMPENSATED order holding a confirmed unit',
    async plant(s, { paid }) {
      await inTx(db(s), async (tx) => {
        await transition(tx, paid.orderId, 'PAID', 'COMPENSATING', 'plant', s.clock.now());
        await transition(tx, paid.orderId, 'COMPENSATING', 'COMPENSATED', 'plant: no release', s.clock.now());
      });
      await refundAtChannel(s, paid.orderId, `${paid.orderId}/refund`);
      return [
        [paid.orderId, 'COMPENSATED_UNITS_HELD'],
        [GLOBAL, 'CONFIRMED_NE_PAID', 'confirmed=2 != paid=1'],
      ];
    },
  },
  {
    proves: 'COMPENSATING_WITHOUT_CONFIRMED_UNITS',
    title: 'a runner that releases before refunding leaves a COMPENSATION_PENDING order whose unit is back on sale',
    async plant(s, { paid }) {
      await event(s, paid.orderId, { type: 'FULFILMENT_REFUSED', cause: 'plant' });
      expect(
        await event(s, paid.orderId, { type: 'COMPENSATION_REFUND', ok: false, cause: 'plant: refund down' }),
      ).toBe('COMPENSATION_PENDING');
      await inTx(db(s), async (tx) =>
        expect(await tryUnconfirm(tx, 'tenant-a', `${paid.orderId}/r1`, s.clock.now())).toBe(true),
      );
      return [
        [paid.orderId, 'COMPENSATING_WITHOUT_CONFIRMED_UNITS'],
        [GLOBAL, 'CONFIRMED_NE_PAID', 'confirmed=1 != paid=1 + compensating=1'],
      ];
    },
  },
  {
    proves: 'COMPENSATION_PAST_DEADLINE',
    title: 'a refund that keeps failing past the deadline leaves COMPENSATION_PENDING for a person',
    async plant(s, { paid }) {
      await event(s, paid.orderId, { type: 'FULFILMENT_REFUSED', cause: 'plant' });
      await event(s, paid.orderId, { type: 'COMPENSATION_REFUND', ok: false, cause: 'plant: refund down' });
      await db(s).query(
        `UPDATE sagas SET state = 'COMPENSATING', deadline_at = now() - interval '1 hour' WHERE saga_id = $1`,
        [paid.orderId],
      );
      expect(await statusOf(s, paid.orderId)).toBe('COMPENSATION_PENDING');
      return [[paid.orderId, 'COMPENSATION_PAST_DEADLINE']];
    },
  },
  {
    proves: 'FULFILLED_WITHOUT_PROVIDER_FULFILMENT',
    title: 'an order marked fulfilled without a fulfilment at the provider',
    async plant(s) {
      const b = await s.buy('rc-unfulfilled', SKU);
      expect((await s.pay(b.token, b.orderId)).body.status).toBe('PAID');
      await db(s).query(
        `UPDATE orders SET fulfilment_status = 'FULFILLED', fulfilment_ref = 'forged' WHERE order_id = $1`,
        [b.orderId],
      );
      return [[b.orderId, 'FULFILLED_WITHOUT_PROVIDER_FULFILMENT']];
    },
  },
];
