import { TRANSITIONS } from '../../src/orders/decide/states.ts';
import type { SaleOutcome } from './sale.ts';

// A checker over what a sale's buyers were told and what the database holds after it (Elle's idea
// for this domain, issue 50), not end counts alone: every acknowledged effect is present, every
// order's transitions form one chain of legal steps (versions 1..n, each step from where the last
// ended), and no unit is sold twice (live orders within the stock, at most one per buyer).

export interface OrderRow {
  order_id: string;
  user_id: string;
  status: string;
}

export interface TransitionRow {
  order_id: string;
  from_status: string | null;
  to_status: string;
  version: number;
}

const LEGAL = new Set(TRANSITIONS.map(([from, to]) => `${from}>${to}`));
// Holding or having sold a unit.
const DEAD = new Set(['CANCELLED', 'FAILED', 'REFUNDED', 'REJECTED', 'COMPENSATED']);

/** Every violation found; empty when the history holds. */
export function checkHistory(input: {
  sale: Pick<SaleOutcome, 'created' | 'paid'>;
  orders: OrderRow[];
  transitions: TransitionRow[];
  stock: number;
}): string[] {
  const found: string[] = [];
  const byId = new Map(input.orders.map((o) => [o.order_id, o]));
  for (const [user, orderId] of input.sale.created) {
    const order = byId.get(orderId);
    if (!order) found.push(`lost: ${orderId} was answered 201 to ${user} and is not in the database`);
    else if (order.user_id !== user) found.push(`${orderId} answered to ${user} belongs to ${order.user_id}`);
  }
  for (const orderId of input.sale.paid)
    if (byId.get(orderId)?.status !== 'PAID')
      found.push(`lost: ${orderId} was answered PAID and is ${byId.get(orderId)?.status ?? 'missing'}`);

  const chains = new Map<string, TransitionRow[]>();
  for (const t of input.transitions) chains.set(t.order_id, [...(chains.get(t.order_id) ?? []), t]);
  for (const order of input.orders) {
    const chain = (chains.get(order.order_id) ?? []).sort((a, b) => a.version - b.version);
    if (chain[0]?.to_status !== 'CREATED') found.push(`${order.order_id}: its history does not begin with CREATED`);
    let at: string | null = null;
    for (const [index, step] of chain.entries()) {
      if (step.version !== index + 1)
        found.push(`${order.order_id}: version ${step.version} where ${index + 1} was due`);
      if (step.from_status !== at)
        found.push(`${order.order_id}: v${step.version} leaves ${step.from_status} but the order was ${at}`);
      else if (at !== null && !LEGAL.has(`${at}>${step.to_status}`))
        found.push(`${order.order_id}: ${at} -> ${step.to_status} is not a legal transition`);
      at = step.to_status;
    }
    if (chain.length > 0 && at !== order.status)
      found.push(`${order.order_id}: its transitions end at ${at}, the order is ${order.status}`);
  }

  const live = input.orders.filter((o) => !DEAD.has(o.status));
  if (live.length > input.stock) found.push(`oversold: ${live.length} live orders for ${input.stock} units`);
  const perUser = new Map<string, number>();
  for (const o of live) perUser.set(o.user_id, (perUser.get(o.user_id) ?? 0) + 1);
  for (const [user, n] of perUser) if (n > 1) found.push(`sold twice: ${user} holds ${n} live orders (limit 1)`);
  return found;
}
