// The stock domain's public surface: SKUs, reservations and their counters. Other modules
// move stock only through these functions; the tables (skus, reservations, user_holdings) are ours.
export { findReservation, lockReservations, lockReservationsOfOrders, reserve, skuKey } from './reservations/repo.ts';
export {
  confirmMany,
  heldKeyOf,
  releaseMany,
  tryConfirm,
  tryKeepShipped,
  tryRelease,
  tryReturnToStock,
  tryUnconfirm,
  type HeldKey,
} from './reservations/finish.ts';
export { findSku, findSkuTerms, listSkus, type SkuPage } from './skus/repo.ts';
export { tryExpireNow } from './reservations/expiry.ts';
export { createSku, DEFAULT_HOLD_TTL_MS, getSku, releaseExpired, skuView } from './skus/service.ts';
export { skuRoutes } from './skus/routes.ts';
export { SkuView } from './skus/schemas.ts';
export type { Reservation, ReservationStatus, ReserveRequest, ReserveResult, Sku, SkuTerms } from './stock.types.ts';
export { listCatalogue, type CatalogueEntry } from './skus/catalogue.ts';
export {
  applyStockBatch,
  receiveStockRequests,
  receiveStockRequestsIn,
  STOCK_BATCH,
  STOCK_REQUEST_KINDS,
  type StockRequest,
} from './service/apply.ts';
export {
  claimStockResults,
  failStockResult,
  listParkedStock,
  markStockResultsSent,
  parkStockResult,
  stockServiceHasWork,
  takeStockResults,
} from './service/queues.ts';
export {
  claimMirrorMoves,
  isMirrored,
  listMirrorHolds,
  markMirrorSynced,
  mirrorHolds,
  type GrantedHold,
  type MirrorMove,
} from './service/mirror.ts';
export { applySkuDefinition, SKU_DEFINED, type SkuDefinition } from './service/replica.ts';
