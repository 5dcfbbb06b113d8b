export const RESERVATION_STATUSES = ['HELD', 'CONFIRMED', 'RELEASED'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/** What reserve() answers; SOLD_OUT and USER_LIMIT are business outcomes, not errors. */
export type ReserveOutcome = 'HELD' | 'SOLD_OUT' | 'USER_LIMIT';

export interface Sku {
  tenantId: string;
  sku: string;
  name: string;
  price: number;
  total: number;
  available: number;
  held: number;
  confirmed: number;
  released: number;
  perUserLimit: number | null;
  holdTtlMs: number;
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
