-- Issue 16: a pay confirms its reservation without taking the SKU's row lock again.
-- Before, confirming moved units held -> confirmed on the SKU row, so every pay queued behind the
-- creates' batches on the one hot row. Now the SKU row keeps two counters that only reserve and
-- release move: `available` and `held`, which from here on counts the units *out* (held +
-- confirmed reservations; the column keeps its name because the create batch's statement writes
-- it, `held = held + n`). HELD -> CONFIRMED changes the reservation row only. The split into held
-- and confirmed is derived from the CONFIRMED reservations where it is read (view sku_counters),
-- so the contract's total = available + held + confirmed still holds in every read, and the row's
-- CHECK (total = available + out) still holds at every commit. Reconciliation proves the rest:
-- out = the units of HELD + CONFIRMED reservations, per SKU.
UPDATE skus SET held = held + confirmed, confirmed = 0;
ALTER TABLE skus DROP COLUMN confirmed;
ALTER TABLE skus ADD CONSTRAINT skus_conserved CHECK (total = available + held);
COMMENT ON COLUMN skus.held IS 'units out: HELD + CONFIRMED reservations (confirming moves no counter here)';

-- The derived split reads the CONFIRMED units of one SKU from this index alone (index-only scan);
-- creates insert HELD rows, which the partial index leaves out.
CREATE INDEX reservations_confirmed_by_sku ON reservations (tenant_id, sku) INCLUDE (quantity)
  WHERE status = 'CONFIRMED';

-- Every reader of held / confirmed (the admin API, reconciliation, the bench and test checks)
-- reads them here, in one snapshot: confirmed from the reservations, held = out - confirmed.
CREATE VIEW sku_counters AS
SELECT s.tenant_id, s.sku, s.total, s.available, s.held - c.confirmed AS held, c.confirmed, s.released,
       s.held AS out_units
FROM skus s
CROSS JOIN LATERAL (
  SELECT coalesce(sum(r.quantity), 0)::int AS confirmed FROM reservations r
  WHERE r.tenant_id = s.tenant_id AND r.sku = s.sku AND r.status = 'CONFIRMED'
) c;
