// The order state machine of seed 000 (figure 29-1). This table is the single source: transition()
// refuses anything not listed, and docs/state-machine.md is generated from it (tests check they agree).
export const ORDER_STATUSES = [
  'CREATED',
  'PAYING',
  'UNKNOWN',
  'PAID',
  'FAILED',
  'CANCELLED',
  'REFUNDING',
  'REFUNDED',
  'COMPENSATING',
  'COMPENSATION_PENDING',
  'COMPENSATED',
  'PENDING',
  'REJECTED',
  'RELEASING',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const TRANSITIONS: ReadonlyArray<readonly [OrderStatus, OrderStatus, string]> = [
  ['CREATED', 'PAYING', 'pay, committed before the channel is called'],
  ['CREATED', 'CANCELLED', 'cancel or hold expired, HELD released in the same transaction'],
  ['CREATED', 'PAID', 'success arrives before the pay reply, reservation still HELD'],
  ['CREATED', 'REFUNDING', 'success arrives but the unit is lost'],
  ['PAYING', 'UNKNOWN', 'timeout or IO error, the reservation stays HELD'],
  ['PAYING', 'PAID', 'success, reservation confirmed (or re-reserved and confirmed)'],
  ['PAYING', 'REFUNDING', 'success but the unit is lost'],
  ['PAYING', 'FAILED', 'declined or closed, reservation released in the same transaction'],
  ['UNKNOWN', 'PAID', 'query or callback success, reservation confirmed (or re-reserved)'],
  ['UNKNOWN', 'REFUNDING', 'success but the unit is lost'],
  ['UNKNOWN', 'FAILED', 'declined or closed, reservation released in the same transaction'],
  ['FAILED', 'REFUNDING', 'success after failure, compensating refund'],
  ['CANCELLED', 'REFUNDING', 'success after cancel, compensating refund'],
  ['REFUNDING', 'REFUNDED', 'the channel confirmed the refund'],
  ['PAID', 'COMPENSATING', 'fulfilment refused for good: undo the journal in reverse (refund, then release)'],
  ['COMPENSATING', 'COMPENSATION_PENDING', 'the refund cannot be done now; the unit stays confirmed'],
  ['COMPENSATION_PENDING', 'COMPENSATING', 'recovery got the refund confirmed'],
  ['COMPENSATING', 'COMPENSATED', 'refund confirmed, then the unit released'],
  // Queued orders (seed 004, docs/queued-orders.md): the stock service answers after the 202.
  ['PENDING', 'CREATED', 'stock service RESERVED every line'],
  ['PENDING', 'REJECTED', 'stock service REJECTED (SOLD_OUT or USER_LIMIT); nothing is held'],
  ['CREATED', 'RELEASING', 'wallet too low on a queued order; release requested from the stock service'],
  ['RELEASING', 'CANCELLED', 'stock service RELEASED the units'],
  // Issue 36: an operator's refund from the console; the confirmed units go back on sale.
  ['PAID', 'REFUNDING', 'an operator refunds: units back on sale, the refund sent with the fixed key'],
  // Issue 48: the provider already refunded (its dashboard), learnt by notification, query or statement.
  ['PAID', 'REFUNDED', 'the provider already refunded: units as an operator refund, no refund call'],
];

/** Statuses whose entry emits an ORDER_<STATUS> outbox event in the same transaction. */
export const EVENT_STATUSES: ReadonlySet<OrderStatus> = new Set(['PAID', 'FAILED', 'CANCELLED', 'REFUNDED']);

/** Statuses recovery must still drive somewhere; reconciliation lists them as pending. */
export const UNFINISHED_STATUSES: ReadonlySet<OrderStatus> = new Set([
  'PAYING',
  'UNKNOWN',
  'REFUNDING',
  'PENDING',
  'RELEASING',
]);

/** Statuses of the after-PAID saga (src/saga) still undoing; reconciliation lists them as pending. */
export const COMPENSATION_STATUSES: ReadonlySet<OrderStatus> = new Set(['COMPENSATING', 'COMPENSATION_PENDING']);

const ALLOWED = new Set(TRANSITIONS.map(([from, to]) => `${from}>${to}`));

export function isAllowed(from: OrderStatus, to: OrderStatus): boolean {
  return ALLOWED.has(`${from}>${to}`);
}

export function mermaidDiagram(): string {
  const lines = [
    'stateDiagram-v2',
    '    [*] --> CREATED: create (reservation HELD, same transaction)',
    '    [*] --> PENDING: create with Prefer: respond-async (stock request, same transaction)',
  ];
  for (const [from, to, why] of TRANSITIONS) lines.push(`    ${from} --> ${to}: ${why}`);
  return lines.join('\n');
}
