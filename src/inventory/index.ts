// The inventory domain's public surface: SKUs, reservations and their counters. Other modules
// move stock only through these functions; the tables (skus, reservations, user_holdings) are ours.
export { findReservation, lockReservations, lockReservationsOfOrders, reserve, skuKey } from './inventory.repo.ts';
export {
  confirmMany,
  heldKeyOf,
  releaseMany,
  tryConfirm,
  tryRelease,
  tryUnconfirm,
  type HeldKey,
} from './inventory.finish.ts';
export { findSku, findSkuTerms } from './inventory.skus.ts';
export { tryExpireNow } from './inventory.expiry.ts';
export { createSku, DEFAULT_HOLD_TTL_MS, getSku, releaseExpired, skuView } from './inventory.service.ts';
export { inventoryRoutes } from './inventory.routes.ts';
export type {
  Reservation,
  ReservationStatus,
  ReserveRequest,
  ReserveResult,
  Sku,
  SkuTerms,
} from './inventory.types.ts';
export { listCatalogue, type CatalogueEntry } from './inventory.catalogue.ts';
export {
  applyStockBatch,
  receiveStockRequests,
  receiveStockRequestsIn,
  STOCK_BATCH,
  STOCK_REQUEST_KINDS,
  type StockRequest,
} from './stock.service.ts';
export {
  claimStockResults,
  failStockResult,
  listParkedStock,
  markStockResultsSent,
  parkStockResult,
  stockServiceHasWork,
  takeStockResults,
} from './stock.queues.ts';
export {
  claimMirrorMoves,
  isMirrored,
  listMirrorHolds,
  markMirrorSynced,
  mirrorHolds,
  type GrantedHold,
  type MirrorMove,
} from './stock.mirror.ts';
export { applySkuDefinition, SKU_DEFINED, type SkuDefinition } from './stock.replica.ts';
