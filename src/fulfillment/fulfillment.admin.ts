import type { Executor } from '../platform/db.ts';
import { findFulfillmentView, type FulfillmentView } from './fulfillment.repo.ts';

export { findFulfillmentView, type FulfillmentView };

/** `GET /v1/admin/fulfillment/{order_id}`: the consumer's view, or null → 404 (nothing arrived). */
export function fulfillmentAdminView(db: Executor, orderId: string): Promise<FulfillmentView | null> {
  return findFulfillmentView(db, orderId);
}
