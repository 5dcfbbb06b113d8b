// The negative controls of the reconciliation's global classes (totals, stock, events, wallet):
// each plants one broken state in a clean world; see cases.ts for the per-order ones.
import { expect } from 'vitest';
import { consume } from '../../src/fulfillment/fulfillment.service.ts';
import { consumeWithoutDedup } from '../support/broken-consumer.ts';
import { findOrder } from '../../src/orders/orders.repo.ts';
import { armMutation } from '../../src/platform/mutations.ts';
import { TENANT } from '../support/payments.ts';
import * as plant from '../support/plant.ts';
import { chargeAtChannel, GLOBAL, holdCallbacks, PRICE, SKU } from './scenario.ts';
import { client, CONFIRMED, db, fault, LOST_MS, NET, walletPaid, type Case } from './cases.support.ts';

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
      await fault(s, 'charge', 'DELAY_RESPONSE', created.orderId, LOST_MS);
      // Issue 55: the real pay with its one guard removed (a lost reply is UNKNOWN, never FAILED).
      const disarm = armMutation('orders.decide.lost-is-unknown', [created.orderId]);
      try {
        expect((await s.pay(created.token, created.orderId)).body.status).toBe('FAILED');
      } finally {
        disarm();
      }
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
    proves: 'EVENT_LINES_DISAGREE',
    title: 'issue 38: an ORDER_PAID event naming another line than the order holds (events named line 1 only) is named',
    async plant(s, { paid }) {
      // What the writer did before issue 38 to an order of several lines: the event named one line.
      await db(s).query(
        `UPDATE outbox SET payload = jsonb_set(payload, '{lines}', '[{"sku": "rc-other", "name": "Other", "quantity": 1, "unit_price": 1}]')
         WHERE order_id = $1 AND event_type = 'ORDER_PAID'`,
        [paid.orderId],
      );
      return [[paid.orderId, 'EVENT_LINES_DISAGREE', 'other lines']];
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
      // The revenue bucket the order's debit credited (issue 38 item 3: revenue is 64 buckets).
      const bucket = (
        await db(s).query<{ credit_account: string }>(
          'SELECT credit_account FROM wallet_transfers WHERE transfer_id = $1',
          [`${id}/pay`],
        )
      ).rows[0]!.credit_account;
      await db(s).query(
        `INSERT INTO wallet_transfers (tenant_id, transfer_id, debit_account, credit_account, amount, kind, user_id, order_id, at) VALUES ($1, $2, 'user:rc-w1', $5, $3, 'DEBIT', 'rc-w1', $4, now())`,
        [TENANT, `${id}/pay-again`, PRICE, id, bucket],
      );
      await db(s).query(
        `UPDATE wallet_accounts SET balance = balance + CASE WHEN account_id = $3 THEN $2::bigint ELSE -$2::bigint END WHERE tenant_id = $1 AND account_id IN ($3, 'user:rc-w1')`,
        [TENANT, PRICE, bucket],
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
            body: { amount: 10, reason: 'test top-up' },
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
