import type { OrderStatus } from '../orders/index.ts';

// Seed 000 table 29-1: per order, the provider's ledger × the order × its current reservation.
// Each class names the bug it catches; docs/reconciliation.md lists them with their proving test.
export const ORDER_CLASSES = [
  'PAID_WITHOUT_CHARGE',
  'PAID_AMOUNT_MISMATCH',
  'PAID_BUT_REFUNDED',
  'PAID_WITHOUT_CONFIRMED_RESERVATION',
  'REFUNDED_LEDGER_MISMATCH',
  'REFUNDED_BUT_RESERVATION_HELD',
  'REFUNDED_BUT_RESERVATION_CONFIRMED',
  'CHARGED_BUT_FAILED',
  'CHARGED_BUT_CANCELLED',
  'FAILED_BUT_RESERVATION_HELD',
  'FAILED_BUT_RESERVATION_CONFIRMED',
  'CANCELLED_BUT_RESERVATION_HELD',
  'CANCELLED_BUT_RESERVATION_CONFIRMED',
  'CHARGED_BUT_CREATED',
  'CREATED_WITHOUT_HELD',
  'MULTIPLE_CHARGES',
  'MULTIPLE_REFUNDS',
  'COMPENSATED_MONEY_KEPT',
  'COMPENSATED_UNITS_HELD',
  'COMPENSATING_WITHOUT_CONFIRMED_UNITS',
  'COMPENSATION_PAST_DEADLINE',
  'FULFILLED_WITHOUT_PROVIDER_FULFILMENT',
  'REJECTED_HOLDS_STOCK',
  // Issue 48: a line at another provider than the one the order's payment was recorded at.
  'CHARGE_AT_OTHER_PROVIDER',
] as const;

import { UNIT_CLASSES } from './reconcile.units.ts';

export const GLOBAL_CLASSES = [
  'PROVIDER_RECORD_WITHOUT_ORDER',
  'CONFIRMED_NE_PAID',
  'STOCK_NOT_CONSERVED',
  'CHANNEL_NET_NE_PAID_SUM',
  'PAID_WITHOUT_EVENT',
  'TERMINAL_WITHOUT_EVENT',
  'DUPLICATE_SHIPMENT',
  'SHIPPED_WITHOUT_PAID',
  'EVENT_LINES_DISAGREE',
  'DEAD_EVENT',
  'WALLET_BALANCE_NE_TRANSFERS',
  'LEDGER_NOT_ZERO',
  'STOCK_RESULT_DISAGREES',
  // Issue 48: per SKU, where its shipped units are (reconcile.units.ts).
  ...UNIT_CLASSES,
] as const;

export type MismatchClass = (typeof ORDER_CLASSES)[number] | (typeof GLOBAL_CLASSES)[number];

export interface LedgerView {
  charges: number;
  charged: number;
  refunds: number;
  refunded: number;
}

export interface OrderFacts {
  status: OrderStatus;
  amount: number;
  reservation: string | null;
  ledger: LedgerView;
  /** Seed 002: the order's fulfilment dimension, whether the provider has it, whether its saga is past its deadline. */
  fulfilment?: string;
  providerFulfilled?: boolean;
  sagaLate?: boolean;
}

/** Not judged, listed as pending: the statuses recovery still drives somewhere. */
export { UNFINISHED_STATUSES as PENDING_STATUSES } from '../orders/index.ts';

const live = (reservation: string | null) => reservation === 'HELD' || reservation === 'CONFIRMED';

/** The classes one order violates; empty when it agrees with the ledger and its reservation. */
export function classify(order: OrderFacts): Array<{ class: MismatchClass; detail: string }> {
  const { ledger, amount, reservation } = order;
  const out: Array<{ class: MismatchClass; detail: string }> = [];
  const add = (c: MismatchClass, detail: string) => out.push({ class: c, detail });
  const money = `charged=${ledger.charged} refunded=${ledger.refunded} amount=${amount} reservation=${reservation ?? 'none'}`;
  if (ledger.charges > 1) add('MULTIPLE_CHARGES', `${ledger.charges} CHARGE lines`);
  if (ledger.refunds > 1) add('MULTIPLE_REFUNDS', `${ledger.refunds} REFUND lines`);
  switch (order.status) {
    case 'PAID':
      if (ledger.charges === 0) add('PAID_WITHOUT_CHARGE', money);
      else if (ledger.charged !== amount) add('PAID_AMOUNT_MISMATCH', money);
      if (ledger.refunds > 0) add('PAID_BUT_REFUNDED', money);
      if (reservation !== 'CONFIRMED') add('PAID_WITHOUT_CONFIRMED_RESERVATION', money);
      if (order.fulfilment === 'FULFILLED' && order.providerFulfilled === false)
        add(
          'FULFILLED_WITHOUT_PROVIDER_FULFILMENT',
          'fulfilment FULFILLED, the provider has no fulfilment under <order>/fulfil',
        );
      break;
    case 'COMPENSATED':
      // Undone means both: the money back and the unit back on sale.
      if (ledger.charged - ledger.refunded !== 0) add('COMPENSATED_MONEY_KEPT', money);
      if (live(reservation)) add('COMPENSATED_UNITS_HELD', money);
      break;
    case 'COMPENSATING':
    case 'COMPENSATION_PENDING':
      // The unit is released only in the same step that ends the compensation, after the refund.
      if (reservation !== 'CONFIRMED') add('COMPENSATING_WITHOUT_CONFIRMED_UNITS', money);
      if (order.sagaLate) add('COMPENSATION_PAST_DEADLINE', `${order.status} past its deadline: ${money}`);
      break;
    case 'REFUNDED':
      if (ledger.charged !== amount || ledger.refunded !== amount) add('REFUNDED_LEDGER_MISMATCH', money);
      if (live(reservation)) add(`REFUNDED_BUT_RESERVATION_${reservation as 'HELD' | 'CONFIRMED'}`, money);
      break;
    case 'FAILED':
    case 'CANCELLED':
      if (ledger.charged - ledger.refunded !== 0) add(`CHARGED_BUT_${order.status}`, money);
      if (live(reservation)) add(`${order.status}_BUT_RESERVATION_${reservation as 'HELD' | 'CONFIRMED'}`, money);
      break;
    case 'CREATED':
      if (ledger.charges > 0) add('CHARGED_BUT_CREATED', money);
      if (reservation !== 'HELD') add('CREATED_WITHOUT_HELD', money);
      break;
    case 'REJECTED':
      // The stock service held nothing for it, and nobody charged it: any live unit or money is a bug.
      if (live(reservation) || ledger.charged - ledger.refunded !== 0) add('REJECTED_HOLDS_STOCK', money);
      break;
    case 'PAYING':
    case 'UNKNOWN':
    case 'REFUNDING':
      break; // not judged: pending convergence
  }
  return out;
}
