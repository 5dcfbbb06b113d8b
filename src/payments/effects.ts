import type { Tx } from '../platform/db.ts';
import { faultPoint } from '../platform/faultpoints.ts';
import { reserve, tryConfirm, tryRelease } from '../inventory/inventory.repo.ts';
import { lockOrder, reservationKeyFor, setReservation, transition } from '../orders/orders.repo.ts';
import type { Order } from '../orders/orders.types.ts';

// What a provider message did to an order. Stored with every notification and returned to callers.
export const EFFECTS = ['PAID', 'PAID_REHELD', 'REFUNDING', 'REFUNDING_ANOMALY', 'FAILED', 'REFUNDED', 'DUPLICATE', 'IGNORED', 'AMOUNT_MISMATCH', 'UNKNOWN_ORDER'] as const;
export type Effect = (typeof EFFECTS)[number];

export interface Applied {
  effect: Effect;
  /** The order entered REFUNDING: the caller sends the refund after its transaction commits. */
  refund: boolean;
  /** The message contradicts the order; recorded for a human. */
  attention?: string;
}

const applied = (effect: Effect, refund = false, attention?: string): Applied => ({ effect, refund, ...(attention ? { attention } : {}) });

async function startRefund(tx: Tx, order: Order, reason: string, now: Date): Promise<boolean> {
  return (await transition(tx, order.orderId, order.status, 'REFUNDING', reason, now)).ok;
}

/**
 * Re-reserves a unit for an order whose reservation was released (expired) while its payment was
 * in flight, under the next key (/r2, /r3, …), and confirms it. True only when the confirm happened.
 */
async function tryRehold(tx: Tx, order: Order, now: Date): Promise<{ ok: boolean; key: string; outcome: string }> {
  const attempt = order.reserveAttempt + 1;
  const key = reservationKeyFor(order.orderId, attempt);
  const [result] = await reserve(tx, [{ tenantId: order.tenantId, key, userId: order.userId, sku: order.sku, quantity: order.quantity }], now);
  if (result?.outcome !== 'HELD' || !(await tryConfirm(tx, order.tenantId, key, now))) return { ok: false, key, outcome: result?.outcome ?? 'SOLD_OUT' };
  await setReservation(tx, order.orderId, key, attempt);
  return { ok: true, key, outcome: 'HELD' };
}

/**
 * The one entry for every success — pay reply, query, close or notification (seed 000's effect
 * table). The order row is locked first, so concurrent successes for one order run one after
 * another and each decides from the committed state. PAID is written only when a confirm happened.
 */
export async function applyCharged(tx: Tx, orderId: string, amount: number, cause: string, now: Date): Promise<Applied> {
  const order = await lockOrder(tx, orderId);
  if (!order) return applied('UNKNOWN_ORDER');
  if (order.amount !== amount) return applied('AMOUNT_MISMATCH', false, `charged ${amount} for an order of ${order.amount}`);
  switch (order.status) {
    case 'PAID':
    case 'REFUNDING':
    case 'REFUNDED':
      return applied('DUPLICATE');
    case 'FAILED':
    case 'CANCELLED':
      await startRefund(tx, order, `${cause} after ${order.status}`, now);
      return applied('REFUNDING_ANOMALY', true);
    case 'CREATED':
    case 'PAYING':
    case 'UNKNOWN':
      break;
  }
  if (await tryConfirm(tx, order.tenantId, order.reservationKey, now)) {
    await transition(tx, orderId, order.status, 'PAID', cause, now);
    await faultPoint('charged.before-commit'); // C29-11: confirm, PAID and outbox row written, not committed
    return applied('PAID');
  }
  const rehold = await tryRehold(tx, order, now);
  if (rehold.ok) {
    await transition(tx, orderId, order.status, 'PAID', `${cause} re-reserved ${rehold.key}`, now);
    return applied('PAID_REHELD');
  }
  await startRefund(tx, order, `${cause} stock lost (${rehold.outcome})`, now);
  return applied('REFUNDING', true);
}

/** DECLINED, or CLOSED by our close: the charge will never happen; the unit goes back on sale. */
export async function applyNotCharged(tx: Tx, orderId: string, cause: string, now: Date): Promise<Applied> {
  const order = await lockOrder(tx, orderId);
  if (!order) return applied('UNKNOWN_ORDER');
  if (order.status === 'PAYING' || order.status === 'UNKNOWN') {
    await transition(tx, orderId, order.status, 'FAILED', cause, now);
    await tryRelease(tx, order.tenantId, order.reservationKey, now);
    return applied('FAILED');
  }
  if (order.status === 'FAILED') return applied('DUPLICATE');
  // A decline for an order that was paid or refunded contradicts the ledger we acted on.
  const contradicts = order.status === 'PAID' || order.status === 'REFUNDING' || order.status === 'REFUNDED';
  return applied('IGNORED', false, contradicts ? `${cause} for a ${order.status} order` : undefined);
}

/** The provider confirmed our refund: REFUNDING → REFUNDED; anything else changes nothing. */
export async function applyRefunded(tx: Tx, orderId: string, amount: number, cause: string, now: Date): Promise<Applied> {
  const order = await lockOrder(tx, orderId);
  if (!order) return applied('UNKNOWN_ORDER');
  if (order.amount !== amount) return applied('AMOUNT_MISMATCH', false, `refunded ${amount} for an order of ${order.amount}`);
  if (order.status === 'REFUNDING') {
    await transition(tx, orderId, 'REFUNDING', 'REFUNDED', cause, now);
    return applied('REFUNDED');
  }
  // We never refund a PAID order, so a refund for one is a provider-side event a person must see.
  return applied('IGNORED', false, order.status === 'PAID' ? 'REFUNDED notification for a PAID order' : undefined);
}
