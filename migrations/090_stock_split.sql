-- The stock service with a database of its own (docs/queued-orders.md, "Split databases"). Every
-- database gets every table; each side uses its own: the shop its mirror of holds and SKU replica
-- version, the stock service its record of what SKU definitions it has published.

-- Shop side: the holds the stock service granted a queued order, mirrored into the shop's
-- reservations (which the order decider locks with the order). `synced_status` is the last status
-- the stock service was asked to take; a mirror row whose status moved past it (confirmed by a pay,
-- released by a cancel, the expiry sweep or a compensation) still owes the stock service a request.
CREATE TABLE stock_mirror_holds (
  tenant_id     text NOT NULL,
  request_key   text NOT NULL,
  order_id      text NOT NULL,
  synced_status text NOT NULL CHECK (synced_status IN ('HELD', 'CONFIRMED', 'RELEASED')),
  PRIMARY KEY (tenant_id, request_key),
  FOREIGN KEY (tenant_id, request_key) REFERENCES reservations (tenant_id, request_key)
);
CREATE INDEX stock_mirror_holds_order ON stock_mirror_holds (order_id);

-- Shop side: the version of the stock service's SKU definition this replica row carries (NULL: a
-- SKU created on this database, not replicated). An older definition arriving late changes nothing.
ALTER TABLE skus ADD COLUMN replica_version bigint;

-- Stock side: the last SKU definition published to the shops; a SKU whose row differs is published again.
CREATE TABLE stock_skus_sent (
  tenant_id      text    NOT NULL,
  sku            text    NOT NULL,
  name           text    NOT NULL,
  price          bigint  NOT NULL,
  total          integer NOT NULL,
  per_user_limit integer,
  hold_ttl_ms    integer NOT NULL,
  version        bigint  NOT NULL,
  PRIMARY KEY (tenant_id, sku)
);

-- Results that only acknowledge (a confirm or a release the shop already made on its mirror, a SKU
-- definition) are recorded as ACKNOWLEDGED: they never go through the order decider.
ALTER TABLE stock_results_in DROP CONSTRAINT stock_results_in_effect_check;
ALTER TABLE stock_results_in ADD CONSTRAINT stock_results_in_effect_check
  CHECK (effect IN ('APPLIED', 'IGNORED', 'UNKNOWN_ORDER', 'ACKNOWLEDGED'));
