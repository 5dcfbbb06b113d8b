import type { OrderStatus } from './decide/states.ts';

export interface Order {
  orderId: string;
  tenantId: string;
  userId: string;
  sku: string;
  quantity: number;
  amount: number;
  status: OrderStatus;
  version: number;
  reservationKey: string;
  reserveAttempt: number;
  /** Fulfilment is its own dimension (seed 002): a FULFILLED order stays PAID. */
  fulfilmentStatus?: 'PENDING' | 'FULFILLED' | 'REFUSED';
  fulfilmentRef?: string | null;
  /** Placed with Prefer: respond-async (its units are moved by the stock service). */
  queued?: boolean;
  /** The provider the payment was sent to (issue 48); null for orders paid before migration 180 or never sent. */
  paymentProvider?: string | null;
  /** The provider's own id of the payment (Stripe `pi_…`, Alipay `trade_no`, the fake channel's txn), once learnt. */
  providerPaymentId?: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface TimelineEntry {
  from: OrderStatus | null;
  to: OrderStatus;
  version: number;
  reason: string;
  at: string;
}
