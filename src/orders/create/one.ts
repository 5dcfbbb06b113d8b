import type { Tx } from '../../platform/db.ts';
import { AppError } from '../../platform/errors.ts';
import type { Principal } from '../../platform/auth.ts';
import { findSkuTerms, reserve, skuKey, type Reservation, type SkuTerms } from '../../stock/index.ts';
import {
  insertLines,
  lineView,
  orderHead,
  refuseAmountTooLarge,
  snapshotLines,
  chargeableTotal,
  type OrderLine,
} from '../orders.lines.ts';
import { jsonResponse, problemResponse, type KeyedOperation, type StoredResponse } from '../../idempotency/index.ts';
import { insertOrder, newOrderId } from '../orders.repo.ts';
import type { Order } from '../orders.types.ts';

export interface RequestedLine {
  sku: string;
  quantity: number;
}

export type CreateOutcome =
  | { kind: 'CREATED'; order: Order; reservation: Reservation; lines: OrderLine[]; reservations: Reservation[] }
  /** `sku`: the first line refused, in SKU order. */
  | { kind: 'SOLD_OUT' | 'USER_LIMIT'; sku: string };

/** Lines in canonical order: by SKU. The digest, the line numbers and every lock follow it. */
export function canonicalLines(lines: readonly RequestedLine[]): RequestedLine[] {
  return [...lines]
    .sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0))
    .map((l) => ({ sku: l.sku, quantity: l.quantity }));
}

export async function readSkus(tx: Tx, tenantId: string, lines: readonly RequestedLine[]): Promise<SkuTerms[]> {
  const skus: SkuTerms[] = [];
  for (const line of lines) {
    const found = await findSkuTerms(tx, tenantId, line.sku);
    if (!found) throw new AppError('SKU_NOT_FOUND', `no SKU ${line.sku}`, { sku: line.sku });
    skus.push(found);
  }
  return skus;
}

/** readSkus with every line's read sent at once: one round trip for all in a pipelined transaction. */
export function readSkusAtOnce(tx: Tx, tenantId: string, lines: readonly RequestedLine[]): Promise<SkuTerms[]> {
  return Promise.all(lines.map((line) => findSkuTerms(tx, tenantId, line.sku))).then((found) =>
    found.map((terms, i) => {
      if (terms) return terms;
      const sku = lines[i]!.sku;
      throw new AppError('SKU_NOT_FOUND', `no SKU ${sku}`, { sku });
    }),
  );
}

/**
 * Places an order of one or more lines in the caller's transaction: every line held or none.
 * Lines are reserved in SKU order, so two buyers of the same SKUs take the SKU row locks in the same
 * order and never deadlock. A refusal rolls back to a savepoint: no order row, no reservation, no
 * counter moved. Each line snapshots the SKU's name and price now; the amount is their sum.
 */
export async function createOrderOfLines(
  tx: Tx,
  principal: Principal,
  requested: readonly RequestedLine[],
  now: Date,
  prefetched?: Promise<SkuTerms[]>,
  maxAmountMinor?: number,
): Promise<CreateOutcome> {
  const sorted = canonicalLines(requested);
  const skus = await (prefetched ?? readSkus(tx, principal.tenantId, sorted));
  const prices = skus.map((sku) => sku.price);
  if (chargeableTotal(sorted, prices, maxAmountMinor) === undefined)
    refuseAmountTooLarge(sorted, prices, maxAmountMinor);
  // Sold out is answered from a plain read, without queueing on the SKU's row lock.
  const short = sorted.find((line, i) => (skus[i]?.available ?? 0) < line.quantity);
  if (short) return { kind: 'SOLD_OUT', sku: short.sku };
  const orderId = newOrderId();
  const lines: OrderLine[] = snapshotLines(orderId, sorted, skus);
  const several = lines.length > 1;
  if (several) await tx.query('SAVEPOINT order_reserve');
  const reservations: Reservation[] = [];
  for (const [i, line] of lines.entries()) {
    const [result] = await reserve(
      tx,
      [
        {
          tenantId: principal.tenantId,
          key: line.reservationKey,
          userId: principal.userId,
          sku: line.sku,
          quantity: line.quantity,
        },
      ],
      now,
      {
        limits: new Map([[skuKey(principal.tenantId, line.sku), skus[i]?.perUserLimit ?? null]]),
        freshKeys: true,
      },
    );
    if (result?.outcome !== 'HELD') {
      if (several) await tx.query('ROLLBACK TO SAVEPOINT order_reserve');
      return { kind: result?.outcome === 'USER_LIMIT' ? 'USER_LIMIT' : 'SOLD_OUT', sku: line.sku };
    }
    reservations.push({
      tenantId: principal.tenantId,
      key: line.reservationKey,
      userId: principal.userId,
      sku: line.sku,
      quantity: line.quantity,
      status: 'HELD',
      expiresAt: result.expiresAt ?? now,
    });
  }
  if (several) await tx.query('RELEASE SAVEPOINT order_reserve');
  const order = orderHead(orderId, principal, lines);
  await insertOrder(tx, order, now);
  await insertLines(tx, order, lines);
  return {
    kind: 'CREATED',
    order: { ...order, status: 'CREATED', version: 1, reserveAttempt: 1, createdAt: now, updatedAt: now },
    reservation: reservations[0] as Reservation,
    lines,
    reservations,
  };
}

/** The stored answer of a refusal: the same bytes from the one-buyer path and the batch. */
export function refusalResponse(kind: 'SOLD_OUT' | 'USER_LIMIT', sku: string): StoredResponse {
  const detail = kind === 'SOLD_OUT' ? `no stock left for ${sku}` : `per-user limit reached for ${sku}`;
  return problemResponse(kind, detail, { sku });
}

/** The stored 201 of a created order: the same bytes from the one-buyer path and the batch. */
export function createdResponse(
  order: Pick<Order, 'orderId' | 'status' | 'sku' | 'quantity' | 'amount'>,
  lines: readonly OrderLine[],
  reservations: readonly Reservation[],
) {
  const reservation = reservations[0] as Reservation;
  const view = {
    order_id: order.orderId,
    status: order.status,
    sku: order.sku,
    quantity: order.quantity,
    amount: order.amount,
    reservation: { key: reservation.key, status: reservation.status, expires_at: reservation.expiresAt.toISOString() },
    lines: lines.map(lineView),
    reservations: reservations.map((r) => ({
      sku: r.sku,
      key: r.key,
      status: r.status,
      expires_at: r.expiresAt.toISOString(),
    })),
  };
  return jsonResponse(201, view, `/v1/orders/${order.orderId}`);
}

/** The sync create in the caller's transaction (the key's transaction), as the answer to store. */
export async function createOrderResponse(
  tx: Tx,
  principal: Principal,
  lines: readonly RequestedLine[],
  now: Date,
  prefetched: Promise<SkuTerms[]> | undefined,
  maxAmountMinor: number,
): Promise<StoredResponse> {
  const outcome = await createOrderOfLines(tx, principal, lines, now, prefetched, maxAmountMinor);
  // A refusal is committed durably: one the client saw must survive a crash, or the retry with the
  // same key could get 201 once a unit came back (docs/security.md).
  if (outcome.kind !== 'CREATED') return refusalResponse(outcome.kind, outcome.sku);
  return createdResponse(outcome.order, outcome.lines, outcome.reservations);
}

/**
 * The keyed one-transaction create (`executeKeyed`'s operation without its scope and digest): the
 * key written once with the order, and the SKUs read in the key read's round trip.
 */
export function keyedCreate(
  principal: Principal,
  lines: readonly RequestedLine[],
  now: () => Date,
  /** The largest total the tenant's provider accepts (maxOrderAmountOf): past it, 400 AMOUNT_TOO_LARGE. */
  maxAmountMinor: number,
): Pick<KeyedOperation, 'finalOnly' | 'prefetch' | 'start'> {
  let skus: Promise<SkuTerms[]> | undefined;
  return {
    finalOnly: true,
    prefetch(tx) {
      skus = readSkusAtOnce(tx, principal.tenantId, canonicalLines(lines));
      skus.catch(() => undefined); // the key may be an earlier request's: then nobody awaits these
    },
    start: async (tx) => ({ final: await createOrderResponse(tx, principal, lines, now(), skus, maxAmountMinor) }),
  };
}
