// The negative controls of the reconciliation, one per class: each plants exactly one broken state
// in a clean, converged world (scenario.ts) and names the set of mismatches that state must produce.
// Where one plant necessarily breaks a second rule, the case says why; every other class must stay
// silent. Used by classes.test.ts, which runs each case on a fresh stack.
import { expect } from 'vitest';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { convergeRefunding, convergeUnknown } from '../../src/payments/index.ts';
import { armMutation } from '../../src/platform/mutations.ts';
import { eventually } from '../support/payments.ts';
import * as plant from '../support/plant.ts';
import { chargeAtChannel, GLOBAL, holdCallbacks, PRICE, refundAtChannel, statusOf } from './scenario.ts';
import { client, CONFIRMED, db, expire, fault, ledgerOf, LOST_MS, NET, type Case } from './cases.support.ts';

export type { Case, Expected } from './cases.support.ts';

export const ORDER_CASES: Case[] = [
  {
    proves: 'PAID_WITHOUT_CHARGE',
    title: 'a CHARGED notification the provider never booked makes a PAID order with no charge behind it',
    async plant(s, { created }) {
      await s.control('POST', '/_control/callbacks/send', {
        merchant_order: created.orderId,
        kind: 'CHARGED',
        amount: PRICE,
        notify_url: s.deps.notifyUrl,
      });
      expect(await statusOf(s, created.orderId)).toBe('PAID');
      return [[created.orderId, 'PAID_WITHOUT_CHARGE'], NET]; // paid_sum counts money that never arrived
    },
  },
  {
    proves: 'PAID_AMOUNT_MISMATCH',
    title: 'a PAID order whose amount was rewritten after the charge no longer matches what the provider took',
    async plant(s, { paid }) {
      await db(s).query('UPDATE orders SET amount = amount + 1000 WHERE order_id = $1', [paid.orderId]);
      return [[paid.orderId, 'PAID_AMOUNT_MISMATCH'], NET]; // paid_sum moves with the amount, the provider's net does not
    },
  },
  {
    proves: 'PAID_BUT_REFUNDED',
    title:
      'a refund made at the provider outside our flow, its notification not delivered, leaves a PAID order whose money went back',
    async plant(s, { paid }) {
      // Held: the REFUNDED notification would converge the order at once (issue 48), no mismatch left.
      await holdCallbacks(s);
      await refundAtChannel(s, paid.orderId, 'refund-by-hand');
      expect((await s.order(paid.orderId)).status).toBe('PAID');
      return [[paid.orderId, 'PAID_BUT_REFUNDED'], NET];
    },
    // Issue 48: the pass that found it asked the provider (REFUNDED too) and converged the order to
    // REFUNDED through the decider; the next pass is clean with nothing repaired by hand.
    async repair(s, { paid }) {
      expect((await s.order(paid.orderId)).status).toBe('REFUNDED');
    },
  },
  {
    proves: 'PAID_WITHOUT_CONFIRMED_RESERVATION',
    title: 'C29-17: a late success that ignores the confirm result writes PAID over an expired, released unit',
    async plant(s, { created }) {
      await holdCallbacks(s);
      await expire(s);
      await chargeAtChannel(s, created.orderId);
      await plant.markPaidIgnoringConfirm(db(s), created.orderId, s.clock.now());
      return [
        [created.orderId, 'PAID_WITHOUT_CONFIRMED_RESERVATION'],
        [GLOBAL, 'CONFIRMED_NE_PAID', 'confirmed=2 != paid=3'],
      ]; // oversold
    },
  },
  {
    proves: 'REFUNDED_LEDGER_MISMATCH',
    title: 'a lost refund reply read as success marks REFUNDED an order the provider never refunded',
    async plant(s, { cancelled }) {
      const id = cancelled.orderId;
      await fault(s, 'refund', 'ERROR_500', id);
      await chargeAtChannel(s, id); // a late charge: the real compensation path sends a refund, which is lost
      await eventually(
        async () =>
          ((await s.control('GET', '/_control/requests')) as { refund: { by_order: Record<string, number> } }).refund
            .by_order[id] ?? 0,
        (n) => n >= 1,
      );
      expect(await statusOf(s, id)).toBe('REFUNDING');
      await plant.markRefundedOnLostReply(db(s), id, s.clock.now());
      return [[id, 'REFUNDED_LEDGER_MISMATCH'], NET]; // the charge is still at the provider
    },
  },
  {
    proves: 'REFUNDED_BUT_RESERVATION_HELD',
    title: 'a cancel that forgets the release keeps the unit HELD through a later compensating refund',
    async plant(s, { created }) {
      await plant.cancelWithoutRelease(db(s), created.orderId, s.clock.now());
      await chargeAtChannel(s, created.orderId); // the real path refunds the late charge
      await eventually(
        () => statusOf(s, created.orderId),
        (status) => status === 'REFUNDED',
      );
      return [[created.orderId, 'REFUNDED_BUT_RESERVATION_HELD']]; // HELD rows still match the held counter
    },
  },
  {
    proves: 'REFUNDED_BUT_RESERVATION_CONFIRMED',
    title: 'a success path with its confirm check inverted refunds an order whose unit it just confirmed',
    async plant(s, { created }) {
      await holdCallbacks(s);
      await chargeAtChannel(s, created.orderId);
      await plant.refundDespiteConfirm(db(s), created.orderId, s.clock.now());
      expect(await convergeRefunding(paymentDeps(s.deps), created.orderId)).toEqual({
        orderId: created.orderId,
        status: 'REFUNDED',
      });
      return [[created.orderId, 'REFUNDED_BUT_RESERVATION_CONFIRMED'], CONFIRMED];
    },
  },
  {
    proves: 'CHARGED_BUT_FAILED',
    title: 'C29-15: NOT_FOUND read as failure without a close, and the lingering charge lands behind a FAILED order',
    async plant(s, { created }) {
      await holdCallbacks(s); // its CHARGED callback would start the real compensating refund
      // The request lingers well past the pay's timeout, so the query after it finds nothing yet.
      await fault(s, 'charge', 'DELAY_REQUEST', created.orderId, LOST_MS + 3_000);
      expect((await s.pay(created.token, created.orderId)).body.status).toBe('UNKNOWN');
      // Issue 55: the real convergence with its one guard removed (NOT_FOUND answered by a close).
      const disarm = armMutation('orders.decide.not-found-closes', [created.orderId]);
      try {
        expect(await convergeUnknown(paymentDeps(s.deps), created.orderId)).toMatchObject({ status: 'FAILED' });
      } finally {
        disarm();
      }
      await eventually(
        () => s.statement(),
        (st) => st.lines.some((l) => l.merchant_order === created.orderId),
        LOST_MS + 10_000,
      );
      return [[created.orderId, 'CHARGED_BUT_FAILED'], NET];
    },
  },
  {
    proves: 'CHARGED_BUT_CANCELLED',
    title: 'a charge that lands after the cancel, its callback lost, leaves money behind a CANCELLED order',
    async plant(s, { cancelled }) {
      await holdCallbacks(s);
      await chargeAtChannel(s, cancelled.orderId);
      return [[cancelled.orderId, 'CHARGED_BUT_CANCELLED'], NET];
    },
  },
  {
    proves: 'FAILED_BUT_RESERVATION_HELD',
    title: 'a decline applied without the release leaves a FAILED order holding its unit',
    async plant(s, { created }) {
      await holdCallbacks(s); // the DECLINED callback would reach the real release first
      await fault(s, 'charge', 'DECLINE', created.orderId);
      await plant.payForgettingReleaseOnDecline(db(s), client(s), created.orderId, s.deps.notifyUrl, s.clock.now());
      return [[created.orderId, 'FAILED_BUT_RESERVATION_HELD']];
    },
  },
  {
    proves: 'FAILED_BUT_RESERVATION_CONFIRMED',
    title: 'a pay that confirms the unit before the provider answers leaves it sold after a decline',
    async plant(s, { created }) {
      await holdCallbacks(s);
      await fault(s, 'charge', 'DECLINE', created.orderId);
      await plant.payConfirmingFirst(db(s), client(s), created.orderId, s.deps.notifyUrl, s.clock.now());
      return [[created.orderId, 'FAILED_BUT_RESERVATION_CONFIRMED'], CONFIRMED];
    },
  },
  {
    proves: 'CANCELLED_BUT_RESERVATION_HELD',
    title: 'a cancel that forgets the release keeps the unit of a CANCELLED order off sale',
    async plant(s, { created }) {
      await plant.cancelWithoutRelease(db(s), created.orderId, s.clock.now());
      return [[created.orderId, 'CANCELLED_BUT_RESERVATION_HELD']];
    },
  },
  {
    proves: 'CANCELLED_BUT_RESERVATION_CONFIRMED',
    title: 'a "buy now" that confirms at order time leaves the unit sold when the real cancel finds nothing HELD',
    async plant(s, { created }) {
      await plant.confirmAtCreate(db(s), created.orderId, s.clock.now());
      expect((await s.call('POST', `/v1/orders/${created.orderId}/cancel`, { token: created.token })).body.status).toBe(
        'CANCELLED',
      );
      return [[created.orderId, 'CANCELLED_BUT_RESERVATION_CONFIRMED'], CONFIRMED];
    },
  },
  {
    proves: 'CHARGED_BUT_CREATED',
    title: 'a charge made without first committing PAYING, its reply and callback lost, sits behind a CREATED order',
    async plant(s, { created }) {
      await holdCallbacks(s);
      await chargeAtChannel(s, created.orderId);
      return [[created.orderId, 'CHARGED_BUT_CREATED'], NET];
    },
  },
  {
    proves: 'CREATED_WITHOUT_HELD',
    title:
      'the expiry sweep releases the unit of a CREATED order and nothing cancels the order (recovery step 4 missing)',
    async plant(s, { created }) {
      await expire(s);
      return [[created.orderId, 'CREATED_WITHOUT_HELD']];
    },
    async repair(s, { created }) {
      await s.recover(); // step 4: a CREATED order whose unit is gone is cancelled
      expect(await statusOf(s, created.orderId)).toBe('CANCELLED');
    },
  },
  {
    proves: 'MULTIPLE_CHARGES',
    title: 'a second CHARGE line for one order in the books of the provider (its idempotency by merchant order broken)',
    ledger: true,
    async plant(s, { paid }) {
      await plant.plantLedgerLine(ledgerOf(s), 'CHARGE', paid.orderId, PRICE);
      // Two charges of the full amount cannot equal the amount, and the extra money is in the net.
      return [[paid.orderId, 'MULTIPLE_CHARGES'], [paid.orderId, 'PAID_AMOUNT_MISMATCH'], NET];
    },
  },
  {
    proves: 'MULTIPLE_REFUNDS',
    title: 'a second REFUND line for one order in the books of the provider (its idempotency by refund key broken)',
    ledger: true,
    async plant(s, { refunded }) {
      await plant.plantLedgerLine(ledgerOf(s), 'REFUND', refunded.orderId, PRICE);
      return [[refunded.orderId, 'MULTIPLE_REFUNDS'], [refunded.orderId, 'REFUNDED_LEDGER_MISMATCH'], NET];
    },
  },
  {
    proves: 'PAID_BUT_REFUNDED',
    title: 'C29-16: a late CHARGED written without the prior-state guard turns a REFUNDED order back into PAID',
    async plant(s, { refunded }) {
      // A planted state, not a guard removed: the guard's own control is C29-16 (tests/payments/negative-controls.test.ts).
      await db(s).query(`UPDATE orders SET status = 'PAID', version = version + 1 WHERE order_id = $1`, [
        refunded.orderId,
      ]);
      // The seed's three findings, plus the two this checker adds: the order points at a released
      // unit, and a raw UPDATE writes no ORDER_PAID event.
      return [
        [refunded.orderId, 'PAID_BUT_REFUNDED'],
        [refunded.orderId, 'PAID_WITHOUT_CONFIRMED_RESERVATION'],
        CONFIRMED,
        NET,
        [refunded.orderId, 'PAID_WITHOUT_EVENT'],
      ];
    },
  },
  {
    proves: 'REJECTED_HOLDS_STOCK',
    title: 'Q-R1: a queued order marked REJECTED while its unit is still HELD (a rejection that forgot the stock)',
    async plant(s, { created }) {
      await db(s).query(`UPDATE orders SET status = 'REJECTED' WHERE order_id = $1`, [created.orderId]);
      return [[created.orderId, 'REJECTED_HOLDS_STOCK', 'reservation=HELD']];
    },
  },
  {
    proves: 'CHARGE_AT_OTHER_PROVIDER',
    title: 'issue 48: a PAID order whose payment is recorded at Stripe and whose only charge is at the fake channel',
    async plant(s, { paid }) {
      // The pay recorded the fake channel; the plant moves the record, as a crossed route would have
      // settled a Stripe order with the fake channel's money. Matching by order alone saw nothing wrong.
      await db(s).query(`UPDATE orders SET payment_provider = 'stripe' WHERE order_id = $1`, [paid.orderId]);
      return [
        [paid.orderId, 'CHARGE_AT_OTHER_PROVIDER', 'at fake'],
        [paid.orderId, 'PAID_WITHOUT_CHARGE'], // its own provider has no charge of it
      ];
    },
  },
];
