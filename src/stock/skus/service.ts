import { inTx, type Db, type Executor } from '../../platform/db.ts';
import type { Clock } from '../../platform/clock.ts';
import { AppError } from '../../platform/errors.ts';
import { findSku, tryInsertSku, tryUpdateSku, type NewSku, type SkuChange } from './repo.ts';
import { releaseExpiredBatch } from '../reservations/expiry.ts';
import type { Sku } from '../stock.types.ts';
import { MAX_STOCK } from './schemas.ts';

export const DEFAULT_HOLD_TTL_MS = 60_000;

export async function createSku(db: Db, sku: NewSku, clock: Clock): Promise<Sku> {
  if (!(await tryInsertSku(db, sku, clock.now()))) throw new AppError('SKU_EXISTS', `SKU ${sku.sku} already exists`);
  const created = await findSku(db, sku.tenantId, sku.sku);
  if (!created) throw new Error('SKU vanished after insert');
  return created;
}

export async function updateSku(db: Executor, tenantId: string, sku: string, change: SkuChange): Promise<Sku> {
  if (await tryUpdateSku(db, tenantId, sku, change, MAX_STOCK)) return getSku(db, tenantId, sku);
  // Refused: no such SKU, or too many units. Read only now, so the common path stays one statement.
  const current = await getSku(db, tenantId, sku);
  const room = Math.max(0, MAX_STOCK - current.total);
  throw new AppError(
    'VALIDATION',
    `body.add_stock would take the total of ${sku} past ${MAX_STOCK} units; at most ${room} more fit`,
    { field: 'body.add_stock', maximum: room },
  );
}

export async function getSku(db: Executor, tenantId: string, sku: string): Promise<Sku> {
  const found = await findSku(db, tenantId, sku);
  if (!found) throw new AppError('SKU_NOT_FOUND', `no SKU ${sku}`);
  return found;
}

export function skuView(sku: Sku) {
  return {
    sku: sku.sku,
    name: sku.name,
    price: sku.price,
    per_user_limit: sku.perUserLimit,
    hold_ttl_ms: sku.holdTtlMs,
    total: sku.total,
    available: sku.available,
    held: sku.held,
    confirmed: sku.confirmed,
    released: sku.released,
    refunded_shipped: sku.refundedShipped,
  };
}

/** The expiry sweep: releases every HELD reservation past its expiry, batch by batch. */
/** Releases expired holds of one tenant (a tenant's admin) or of every tenant (the loop, an operator). */
export async function releaseExpired(db: Db, clock: Clock, tenantId?: string): Promise<number> {
  let total = 0;
  for (;;) {
    const released = await inTx(db, (tx) => releaseExpiredBatch(tx, clock.now(), tenantId));
    total += released;
    if (released === 0) return total;
  }
}
