import { randomHex } from '../platform/ids.ts';

export function newOrderId(): string {
  return `ord_${randomHex(10)}`;
}

/** The first reservation key of an order; re-reservations use /r2, /r3, … */
export function reservationKeyFor(orderId: string, attempt: number): string {
  return `${orderId}/r${attempt}`;
}

/**
 * The reservation key of a line: line 1 keeps the one-line form (`<order>/r<attempt>`), so every
 * existing order and reader is unchanged; line n is `<order>/l<n>/r<attempt>`.
 */
export function lineReservationKeyFor(orderId: string, lineNo: number, attempt: number): string {
  return lineNo === 1 ? reservationKeyFor(orderId, attempt) : `${orderId}/l${lineNo}/r${attempt}`;
}
