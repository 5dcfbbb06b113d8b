/** REFUNDED_SHIPPED (issue 48): refunded after its units shipped; still out of stock until returned. */
export const RESERVATION_STATUSES = ['HELD', 'CONFIRMED', 'RELEASED', 'REFUNDED_SHIPPED'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/** What reserve() answers; SOLD_OUT and USER_LIMIT are business outcomes, not errors. */
export type ReserveOutcome = 'HELD' | 'SOLD_OUT' | 'USER_LIMIT';

/** What an order needs of a SKU: read from its row alone, never from the derived counters. */
export interface SkuTerms {
  tenantId: string;
  sku: string;
  name: string;
  price: number;
  total: number;
  available: number;
  perUserLimit: number | null;
  holdTtlMs: number;
}

/** A SKU with its counters (view sku_counters: held and confirmed derived, migration 110). */
export interface Sku extends SkuTerms {
  held: number;
  confirmed: number;
  released: number;
  /** Units of orders refunded after they shipped: out of stock until an operator returns them (issue 48). */
  refundedShipped: number;
}

export interface ReserveRequest {
  tenantId: string;
  key: string;
  userId: string;
  sku: string;
  quantity: number;
}

export interface ReserveResult {
  key: string;
  outcome: ReserveOutcome;
  /** Set when the key already existed: the reservation's current status (idempotent replay). */
  existingStatus?: ReservationStatus;
  expiresAt?: Date;
}

export interface Reservation {
  tenantId: string;
  key: string;
  userId: string;
  sku: string;
  quantity: number;
  status: ReservationStatus;
  expiresAt: Date;
}
