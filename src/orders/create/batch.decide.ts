import type { StoredResponse } from '../../idempotency/index.ts';
import { createdResponse, refusalResponse } from './one.ts';
import type { BatchAnswer, BatchGrant, BatchSku } from './batch.repo.ts';
import type { BatchedCreate } from './batch.lanes.ts';
import { lineReservationKeyFor } from '../orders.keys.ts';
import { newOrderId } from '../orders.repo.ts';

// The transactional batch's decision (orders/create/batch.ts), pure: who of the batch gets units.

export interface Plan {
  grants: BatchGrant[];
  holdings: Map<string, number>;
  answers: BatchAnswer[];
}

/** Buyers in arrival order: each gets a unit while units last, within the per-user limit. */
export function decide(
  tenantId: string,
  skuName: string,
  mine: readonly BatchedCreate[],
  sku: BatchSku,
  held: ReadonlyMap<string, number>,
  now: Date,
) {
  const plan: Plan = { grants: [], holdings: new Map(), answers: [] };
  const holding = new Map(held);
  let remaining = sku.available;
  for (const p of mine) {
    const { userId } = p.principal;
    const quantity = p.line.quantity;
    const answer = (response: StoredResponse) =>
      plan.answers.push({ userId, key: p.scope.key, ...response, location: response.location ?? null });
    if (quantity > remaining) {
      answer(refusalResponse('SOLD_OUT', skuName));
      continue;
    }
    if (sku.perUserLimit !== null && (holding.get(userId) ?? 0) + quantity > sku.perUserLimit) {
      answer(refusalResponse('USER_LIMIT', skuName));
      continue;
    }
    remaining -= quantity;
    if (sku.perUserLimit !== null) {
      holding.set(userId, (holding.get(userId) ?? 0) + quantity);
      plan.holdings.set(userId, (plan.holdings.get(userId) ?? 0) + quantity);
    }
    const orderId = newOrderId();
    const reservationKey = lineReservationKeyFor(orderId, 1, 1);
    const expiresAt = new Date(now.getTime() + sku.holdTtlMs);
    const amount = sku.price * quantity;
    plan.grants.push({ orderId, reservationKey, userId, quantity, amount, expiresAt });
    const line = { lineNo: 1, sku: skuName, name: sku.name, unitPrice: sku.price, quantity, amount, reservationKey };
    const reservation = {
      tenantId,
      key: reservationKey,
      userId,
      sku: skuName,
      quantity,
      status: 'HELD' as const,
      expiresAt,
    };
    answer(createdResponse({ orderId, status: 'CREATED', sku: skuName, quantity, amount }, [line], [reservation]));
  }
  return plan;
}
