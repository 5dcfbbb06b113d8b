import { Counter, Gauge, Registry } from 'prom-client';

// What an operator of a flash sale watches, beside HTTP rates: outcomes, not requests. One
// registry for the process; every server's /metrics includes it.
export const businessRegistry = new Registry();

export const businessMetrics = {
  orders: new Counter({
    name: 'flashpay_orders_total',
    help: 'Order creations executed (replays excluded), by HTTP status',
    labelNames: ['status'],
    registers: [businessRegistry],
  }),
  payments: new Counter({
    name: 'flashpay_payments_total',
    help: 'Pay requests executed (replays excluded), by the order status answered or the refusal code',
    labelNames: ['outcome'],
    registers: [businessRegistry],
  }),
  notifications: new Counter({
    name: 'flashpay_notifications_total',
    help: 'Provider notifications processed, by kind and effect',
    labelNames: ['kind', 'effect'],
    registers: [businessRegistry],
  }),
  recovered: new Counter({
    name: 'flashpay_recovery_resolved_total',
    help: 'Orders a recovery pass converged, by final status',
    labelNames: ['status'],
    registers: [businessRegistry],
  }),
  unfinished: new Gauge({
    name: 'flashpay_orders_unfinished',
    help: 'PAYING, UNKNOWN and REFUNDING orders after the last recovery pass',
    registers: [businessRegistry],
  }),
  walletTransfers: new Counter({
    name: 'flashpay_wallet_transfers_total',
    help: 'Wallet transfers posted (replays excluded), by kind: CREDIT, DEBIT, REFUND',
    labelNames: ['kind'],
    registers: [businessRegistry],
  }),
  walletRefusals: new Counter({
    name: 'flashpay_wallet_insufficient_funds_total',
    help: 'Wallet debits refused for too low a balance',
    labelNames: ['kind'],
    registers: [businessRegistry],
  }),
  txRetries: new Counter({
    name: 'flashpay_db_tx_retries_total',
    help: 'Transactions retried, by SQLSTATE (40001 serialization, 40P01 deadlock) or "connection"',
    labelNames: ['code'],
    registers: [businessRegistry],
  }),
  componentUp: new Gauge({
    name: 'flashpay_component_up',
    help: 'A broker consumer is connected (1) or down and reconnecting (0)',
    labelNames: ['component'],
    registers: [businessRegistry],
  }),
  mismatches: new Gauge({
    name: 'flashpay_reconciliation_mismatches',
    help: 'Mismatches found by the last reconciliation',
    registers: [businessRegistry],
  }),
};
