// The negative controls of the reconciliation, one per class: each plants exactly one broken state
// in a clean, converged world (scenario.ts) and names the set of mismatches that state must produce.
// Where one plant necessarily breaks a second rule, the case says why; every other class must stay
// silent. Used by classes.test.ts, which runs each case on a fresh stack.
import { expect } from 'vitest';
import { consume } from '../../src/fulfillment/fulfillment.service.ts';
import { consumeWithoutDedup } from '../support/broken-consumer.ts';
import { findOrder } from '../../src/orders/orders.repo.ts';
import { channelClient } from '../../src/payments/channel.client.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { convergeRefunding } from '../../src/payments/index.ts';
import type { MismatchClass } from '../../src/reconcile/reconcile.rules.ts';
import { convergeWithoutClose, payTreatingTimeoutAsFailure, unguardedMarkPaid } from '../support/broken.ts';
import { eventually, TENANT, type PaymentStack } from '../support/payments.ts';
import * as plant from '../support/plant.ts';
import { drain, reconciliation } from './scenario.ts';
import {
  chargeAtChannel,
  GLOBAL,
  HOLD_TTL_MS,
  holdCallbacks,
  PRICE,
  refundAtChannel,
  SKU,
  statusOf,
  type Scenario,
} from './scenario.ts';

/** `[order_id, class]`, optionally with text its detail must contain. */
export type Expected = Array<[orderId: string, mismatch: MismatchClass, detail?: string]>;

export interface Case {
  /** The class this case exists to fire. */
  proves: MismatchClass;
  /** One sentence: the broken safeguard and what the checker must say. */
  title: string;
  /** Needs the provider's books in PostgreSQL (plant.startLedgerPaymentStack). */
  ledger?: true;
  plant(s: PaymentStack, scenario: Scenario): Promise<Expected>;
  /** Optional contrast after the assertion: the real repair path, back to clean. */
  repair?(s: PaymentStack, scenario: Scenario): Promise<void>;
}

// Paid money the orders do not account for always also moves channel_net away from paid_sum;
// a CONFIRMED reservation without a PAID order (or the reverse) always also moves confirmed != paid.
const NET: [string, MismatchClass] = [GLOBAL, 'CHANNEL_NET_NE_PAID_SUM'];
const CONFIRMED: [string, MismatchClass] = [GLOBAL, 'CONFIRMED_NE_PAID'];

const db = (s: PaymentStack) => s.db.pool;
const client = (s: PaymentStack, timeoutMs = s.deps.config.payTimeoutMs) => channelClient(s.channel.url, timeoutMs);
const expire = async (s: PaymentStack) => {
  s.clock.advance(HOLD_TTL_MS + 1);
  expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(1);
};
const fault = (s: PaymentStack, op: string, kind: string, merchantOrder: string, ms?: number) =>
  s.control('POST', '/_control/faults', {
    op,
    kind,
    merchant_order: merchantOrder,
    ...(ms === undefined ? {} : { ms }),
  });
function ledgerOf(s: PaymentStack) {
  if (!('ledger' in s)) throw new Error('this case needs startLedgerPaymentStack');
  return (s as plant.LedgerPaymentStack).ledger;
}

/** A buyer with a wallet, an order on a SKU of its own paid from it; the report stays clean. */
async function walletPaid(s: PaymentStack, user: string, sku: string): Promise<string> {
  await s.call('POST', '/v1/admin/skus', { token: s.admin, body: { sku, name: sku, price: PRICE, stock: 1 } });
  expect(
    (
      await s.call('POST', `/v1/admin/wallets/${user}/credits`, {
        token: s.admin,
        body: { amount: 2 * PRICE },
        headers: { 'idempotency-key': `fund-${user}` },
      })
    ).status,
  ).toBe(201);
  const bought = await s.buy(user, sku);
  expect(
    (
      await s.call('POST', `/v1/orders/${bought.orderId}/pay`, {
        token: bought.token,
        body: { method: 'wallet' },
        headers: { 'idempotency-key': `wpay-${user}` },
      })
    ).body.status,
  ).toBe('PAID');
  await drain(s);
  const report = await reconciliation(s);
  expect([report.mismatches, report.totals.wallet_net, report.totals.paid_sum]).toEqual([[], PRICE, 3 * PRICE]);
  return bought.orderId;
}

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
    title: 'a refund made at the provider outside our flow leaves a PAID order whose money went back',
    async plant(s, { paid }) {
      await refundAtChannel(s, paid.orderId, 'refund-by-hand');
      // The service cannot undo a PAID on its own: it records the notification for a human.
      const view = await eventually(
        () => s.order(paid.orderId),
        (v) => v.notifications.some((n) => n.kind === 'REFUNDED'),
      );
      expect([view.status, view.notifications.at(-1)?.effect, view.attention]).toEqual([
        'PAID',
        'IGNORED',
        expect.stringContaining('REFUNDED'),
      ]);
      return [[paid.orderId, 'PAID_BUT_REFUNDED'], NET];
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
      await fault(s, 'charge', 'DELAY_REQUEST', created.orderId, 600);
      expect((await s.pay(created.token, created.orderId)).body.status).toBe('UNKNOWN');
      await convergeWithoutClose(db(s), client(s), created.orderId, s.clock.now());
      await eventually(
        () => s.statement(),
        (st) => st.lines.some((l) => l.merchant_order === created.orderId),
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
      await unguardedMarkPaid(db(s), refunded.orderId);
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
];

export const GLOBAL_CASES: Case[] = [
  {
    proves: 'PROVIDER_RECORD_WITHOUT_ORDER',
    title:
      'a charge made inside the transaction that creates the order, which then rolls back, leaves the provider with an order we never had',
    async plant(s) {
      await holdCallbacks(s);
      const principal = { tenantId: TENANT, userId: 'rc-ghost', scope: 'buyer' as const };
      const ghost = await plant.chargeInsideOrderTransaction(
        db(s),
        client(s),
        principal,
        SKU,
        s.deps.notifyUrl,
        s.clock.now(),
      );
      expect(await findOrder(db(s), ghost)).toBeUndefined();
      return [[ghost, 'PROVIDER_RECORD_WITHOUT_ORDER'], NET];
    },
  },
  {
    proves: 'CONFIRMED_NE_PAID',
    title: 'a re-hold run for an order that already had its unit confirms a second unit no order owns',
    async plant(s, { paid }) {
      await plant.reholdDespiteConfirm(db(s), paid.orderId, s.clock.now());
      return [CONFIRMED];
    },
  },
  {
    proves: 'STOCK_NOT_CONSERVED',
    title: 'a hold taken on the SKU counters without its reservation row drifts the counters from the rows',
    async plant(s) {
      // total = available + held + confirmed is a table CHECK, so the drift is counters vs rows.
      await db(s).query('UPDATE skus SET available = available - 1, held = held + 1 WHERE sku = $1', [SKU]);
      return [[GLOBAL, 'STOCK_NOT_CONSERVED']];
    },
  },
  {
    proves: 'CHANNEL_NET_NE_PAID_SUM',
    title:
      'C29-14: a charge timeout read as failure releases the unit, another buyer pays for it, and the provider holds both payments',
    async plant(s, { created }) {
      await holdCallbacks(s);
      await fault(s, 'charge', 'DELAY_RESPONSE', created.orderId, 500);
      await payTreatingTimeoutAsFailure(db(s), client(s, 300), created.orderId, s.deps.notifyUrl, s.clock.now());
      const other = await s.buy('rc-other', SKU);
      expect((await s.pay(other.token, other.orderId)).body.status).toBe('PAID');
      // The seed's two lines: PAID is the two scenario orders and the other buyer; the provider also holds the victim's 1990.
      return [
        [created.orderId, 'CHARGED_BUT_FAILED', `charged=${PRICE} refunded=0 amount=${PRICE} reservation=RELEASED`],
        [GLOBAL, 'CHANNEL_NET_NE_PAID_SUM', `channel_net=${4 * PRICE} != paid_sum=${3 * PRICE}`],
      ];
    },
  },
  {
    proves: 'PAID_WITHOUT_EVENT',
    title: 'C29-19: a dual write commits PAID and dies before notifying; channel, orders and stock still agree',
    async plant(s, { created }) {
      await holdCallbacks(s);
      await chargeAtChannel(s, created.orderId);
      await plant.markPaidByDualWrite(db(s), created.orderId, s.clock.now());
      return [[created.orderId, 'PAID_WITHOUT_EVENT']]; // the three-way match alone is blind to it
    },
  },
  {
    proves: 'TERMINAL_WITHOUT_EVENT',
    title:
      'a cancel written straight to the table, bypassing transition(), releases the unit but leaves no ORDER_CANCELLED event',
    async plant(s, { created }) {
      await plant.cancelWithoutOutbox(db(s), created.orderId, s.clock.now());
      return [[created.orderId, 'TERMINAL_WITHOUT_EVENT']]; // money and stock agree: only the event is missing
    },
  },
  {
    proves: 'DUPLICATE_SHIPMENT',
    title: 'C29-18: a redelivered ORDER_PAID reaching a consumer without dedup ships the order twice',
    async plant(s, { paid }) {
      const row = await db(s).query<{
        event_id: string;
        order_id: string;
        event_type: string;
        order_version: number;
        payload: Record<string, unknown>;
      }>(
        `SELECT event_id::text, order_id, event_type, order_version, payload FROM outbox WHERE order_id = $1 AND event_type = 'ORDER_PAID'`,
        [paid.orderId],
      );
      const event = row.rows[0];
      if (!event) throw new Error('no ORDER_PAID event');
      expect(await consume(db(s), event, s.clock)).toBe('DUPLICATE'); // contrast: the real consumer absorbs it
      await consumeWithoutDedup(db(s), event, s.clock);
      return [[GLOBAL, 'DUPLICATE_SHIPMENT']];
    },
  },
  {
    proves: 'SHIPPED_WITHOUT_PAID',
    title: 'an ORDER_PAID event forged for a cancelled order is shipped by the consumer and named by reconciliation',
    async plant(s, { cancelled }) {
      // What a holder of the provider's secret could do when it also signed internal events.
      const forged = {
        event_id: 'forged-1',
        order_id: cancelled.orderId,
        event_type: 'ORDER_PAID',
        order_version: 99,
        payload: {},
      };
      expect(await consume(db(s), forged, s.clock)).toBe('APPLIED');
      return [[cancelled.orderId, 'SHIPPED_WITHOUT_PAID', 'never was PAID (now CANCELLED)']];
    },
  },
  {
    proves: 'DEAD_EVENT',
    title: 'an event of a type no sink routes is parked dead by the relay and waits for an operator',
    async plant(s, { paid }) {
      const now = s.clock.now();
      await db(s).query(
        `INSERT INTO outbox (order_id, event_type, order_version, payload, created_at, next_attempt_at) VALUES ($1, 'ORDER_SHIPPED', 99, '{}', $2, $2)`,
        [paid.orderId, now],
      );
      return [[GLOBAL, 'DEAD_EVENT']]; // parked by the drain that follows every plant
    },
  },
  {
    proves: 'MULTIPLE_CHARGES',
    title: 'W-R1: a second wallet debit for a wallet-paid order, booked consistently, is two charges for one order',
    async plant(s) {
      const id = await walletPaid(s, 'rc-w1', 'rcw1');
      await db(s).query(
        `INSERT INTO wallet_transfers (tenant_id, transfer_id, debit_account, credit_account, amount, kind, user_id, order_id, at) VALUES ($1, $2, 'user:rc-w1', 'revenue', $3, 'DEBIT', 'rc-w1', $4, now())`,
        [TENANT, `${id}/pay-again`, PRICE, id],
      );
      await db(s).query(
        `UPDATE wallet_accounts SET balance = balance + CASE WHEN account_id = 'revenue' THEN $2::bigint ELSE -$2::bigint END WHERE tenant_id = $1 AND account_id IN ('revenue', 'user:rc-w1')`,
        [TENANT, PRICE],
      );
      return [[id, 'MULTIPLE_CHARGES'], [id, 'PAID_AMOUNT_MISMATCH', `charged=${2 * PRICE}`], NET]; // the wallet holds twice the order's amount
    },
  },
  {
    proves: 'WALLET_BALANCE_NE_TRANSFERS',
    title:
      'W-R2: money moved between two wallets by a plain UPDATE, with no transfer behind it, leaves both balances unexplained',
    async plant(s) {
      await walletPaid(s, 'rc-w2', 'rcw2');
      expect(
        (
          await s.call('POST', '/v1/admin/wallets/rc-w3/credits', {
            token: s.admin,
            body: { amount: 10 },
            headers: { 'idempotency-key': 'fund-rc-w3' },
          })
        ).status,
      ).toBe(201);
      await db(s).query(
        `UPDATE wallet_accounts SET balance = balance + CASE WHEN account_id = 'user:rc-w3' THEN 100 ELSE -100 END WHERE tenant_id = $1 AND account_id IN ('user:rc-w2', 'user:rc-w3')`,
        [TENANT],
      );
      // The ledger still sums to zero: only the per-account check can see it.
      return [
        [GLOBAL, 'WALLET_BALANCE_NE_TRANSFERS', 'user:rc-w2'],
        [GLOBAL, 'WALLET_BALANCE_NE_TRANSFERS'],
      ];
    },
  },
  {
    proves: 'LEDGER_NOT_ZERO',
    title:
      'W-R3: a balance raised without a counter-entry (single-entry bookkeeping) makes the ledger sum to more than zero',
    async plant(s) {
      await walletPaid(s, 'rc-w4', 'rcw4');
      await db(s).query(
        `UPDATE wallet_accounts SET balance = balance + 100 WHERE tenant_id = $1 AND account_id = 'user:rc-w4'`,
        [TENANT],
      );
      return [
        [GLOBAL, 'LEDGER_NOT_ZERO', 'accounts sum to 100'],
        [GLOBAL, 'WALLET_BALANCE_NE_TRANSFERS', 'user:rc-w4'],
      ];
    },
  },
  {
    proves: 'STOCK_RESULT_DISAGREES',
    title: 'Q-R2: the stock service answered REJECTED (delivered) for an order the shop shows PAID',
    async plant(s, { paid }) {
      await db(s).query(
        `INSERT INTO stock_inbox (request_key, event_type, order_id, payload, received_at, applied_at, result_type, result)
         VALUES ($1 || '/deduct', 'STOCK_DEDUCTION_REQUESTED', $1, '{}', now(), now(), 'STOCK_REJECTED', '{"reason": "SOLD_OUT"}')`,
        [paid.orderId],
      );
      return [[paid.orderId, 'STOCK_RESULT_DISAGREES', 'answered STOCK_REJECTED, the order is PAID']];
    },
  },
];
