// The decision table: `decide` over every status × a representative of every event, rendered for
// docs/state-machine.md (tests/docs checks the document) and pinned by tests/orders/decide.table.test.ts.
import { decide, type Decision, type Hold, type OrderEvent } from './decider.ts';
import { ORDER_STATUSES, type OrderStatus } from './states.ts';

const NOW = new Date('2026-01-01T00:00:00Z');
const LATER = new Date('2026-01-01T00:01:00Z');
const EARLIER = new Date('2025-12-31T23:59:00Z');
const AMOUNT = 1990;

export interface Case {
  name: string;
  event: OrderEvent;
  hold: Hold['status'];
  expired?: boolean;
  /** A queued order (Prefer: respond-async). */
  queued?: boolean;
  /** Its fulfilment is FULFILLED: the units shipped (issue 48). */
  shipped?: boolean;
}

const answered = (
  via: Extract<OrderEvent, { type: 'PROVIDER_ANSWERED' }>['via'],
  status: Extract<OrderEvent, { type: 'PROVIDER_ANSWERED' }>['status'],
  amount?: number,
): OrderEvent => ({
  type: 'PROVIDER_ANSWERED',
  via,
  status,
  cause: via,
  ...(amount !== undefined ? { amount } : {}),
});

export const CASES: readonly Case[] = [
  { name: 'pay', event: { type: 'PAY_REQUESTED' }, hold: 'HELD' },
  { name: 'pay, hold expired', event: { type: 'PAY_REQUESTED' }, hold: 'HELD', expired: true },
  { name: 'wallet pay', event: { type: 'WALLET_PAY_REQUESTED' }, hold: 'HELD' },
  { name: 'wallet pay, hold expired', event: { type: 'WALLET_PAY_REQUESTED' }, hold: 'HELD', expired: true },
  { name: 'cancel', event: { type: 'CANCEL_REQUESTED' }, hold: 'HELD' },
  { name: 'hold expired (recovery)', event: { type: 'HOLD_EXPIRED' }, hold: 'RELEASED' },
  { name: 'CHARGED, hold HELD', event: answered('callback', 'CHARGED', AMOUNT), hold: 'HELD' },
  { name: 'CHARGED, hold released', event: answered('query', 'CHARGED', AMOUNT), hold: 'RELEASED' },
  { name: 'CHARGED, other amount', event: answered('callback', 'CHARGED', AMOUNT + 1), hold: 'HELD' },
  { name: 'DECLINED', event: answered('callback', 'DECLINED'), hold: 'HELD' },
  { name: 'CLOSED (our close)', event: answered('close', 'CLOSED'), hold: 'HELD' },
  { name: 'REFUNDED (notification)', event: answered('callback', 'REFUNDED', AMOUNT), hold: 'CONFIRMED' },
  { name: 'REFUNDED (query)', event: answered('query', 'REFUNDED', AMOUNT), hold: 'HELD' },
  { name: 'refund refused', event: answered('refund', 'REFUND_REFUSED'), hold: 'CONFIRMED' },
  { name: 'NOT_FOUND (query)', event: answered('query', 'NOT_FOUND'), hold: 'HELD' },
  { name: 'NOT_FOUND (close)', event: answered('close', 'NOT_FOUND'), hold: 'HELD' },
  { name: 'charge answer lost', event: answered('charge', 'LOST'), hold: 'HELD' },
  { name: 'query answer lost', event: answered('query', 'LOST'), hold: 'HELD' },
  { name: 'fulfilment refused', event: { type: 'FULFILMENT_REFUSED', cause: 'fulfil' }, hold: 'CONFIRMED' },
  {
    name: 'compensating refund failed',
    event: { type: 'COMPENSATION_REFUND', ok: false, cause: 'refund' },
    hold: 'CONFIRMED',
  },
  {
    name: 'compensating refund confirmed',
    event: { type: 'COMPENSATION_REFUND', ok: true, cause: 'refund' },
    hold: 'CONFIRMED',
  },
  { name: 'compensation release', event: { type: 'COMPENSATION_RELEASE' }, hold: 'CONFIRMED' },
  { name: 'stock reserved', event: { type: 'STOCK_RESERVED' }, hold: 'HELD', queued: true },
  { name: 'stock rejected', event: { type: 'STOCK_REJECTED', reason: 'SOLD_OUT' }, hold: 'MISSING', queued: true },
  { name: 'stock released', event: { type: 'STOCK_RELEASED' }, hold: 'RELEASED', queued: true },
  { name: 'wallet too low (queued order)', event: { type: 'WALLET_FUNDS_SHORT' }, hold: 'HELD', queued: true },
  { name: 'operator refund', event: { type: 'OPERATOR_REFUND', operator: 'ops' }, hold: 'CONFIRMED' },
  {
    name: 'operator refund, shipped',
    event: { type: 'OPERATOR_REFUND', operator: 'ops' },
    hold: 'CONFIRMED',
    shipped: true,
  },
  { name: 'operator return', event: { type: 'OPERATOR_RETURN', operator: 'ops' }, hold: 'REFUNDED_SHIPPED' },
];

export function decideCase(status: OrderStatus, c: Case): Decision {
  const hold: Hold = {
    key: 'ord_x/r1',
    sku: 'sku',
    quantity: 1,
    status: c.hold,
    expiresAt: c.expired ? EARLIER : LATER,
  };
  return decide(
    {
      orderId: 'ord_x',
      status,
      amount: AMOUNT,
      reserveAttempt: 1,
      ...(c.queued ? { queued: true } : {}),
      ...(c.shipped ? { fulfilmentStatus: 'FULFILLED' as const } : {}),
    },
    [hold],
    c.event,
    NOW,
  );
}

/** One cell: `outcome`, `→ STATUS` when it transitions, stock moves, provider calls; `else …` for a refused re-reserve. */
export function describeDecision(d: Decision): string {
  const parts: string[] = [d.outcome];
  if (d.to) parts.push(`→ ${d.to}`);
  for (const m of d.stock) parts.push(m.op);
  for (const c of d.calls) parts.push(`call ${c}`);
  if (d.emits.includes('STOCK_RELEASE_REQUESTED')) parts.push('request release');
  if (d.attention) parts.push('flag');
  const cell = parts.join(' ');
  return d.orElse ? `${cell}; else ${describeDecision(d.orElse)}` : cell;
}

export function decisionTableMarkdown(): string {
  const lines = [`| event | ${ORDER_STATUSES.join(' | ')} |`, `|---|${ORDER_STATUSES.map(() => '---').join('|')}|`];
  for (const c of CASES)
    lines.push(`| ${c.name} | ${ORDER_STATUSES.map((s) => describeDecision(decideCase(s, c))).join(' | ')} |`);
  return lines.join('\n');
}
