import { randomBytes } from 'node:crypto';

export function newOrderId(): string {
  return `ord_${randomBytes(10).toString('hex')}`;
}

/** The first reservation key of an order; re-reservations use /r2, /r3, … */
export function reservationKeyFor(orderId: string, attempt: number): string {
  return `${orderId}/r${attempt}`;
}
