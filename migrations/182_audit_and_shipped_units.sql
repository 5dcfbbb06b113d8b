-- Issue 48 (h3): an audit trail worth the name, and shipped units that stay shipped.

-- 1. The operators' actions on an order (migration 170) gain the operator's reason and tenant (the
--    `operator` column is their `sub`, `at` the time), and a `return` action (units back on sale after
--    a refund of a shipped order). A refund, a cancel and a return carry a reason from here on; rows
--    written before keep none (NOT VALID: the check holds for every new row, old rows are history).
ALTER TABLE order_operator_actions
  ADD COLUMN reason text CHECK (char_length(reason) BETWEEN 1 AND 500),
  ADD COLUMN operator_tenant text CHECK (char_length(operator_tenant) BETWEEN 1 AND 128);
ALTER TABLE order_operator_actions DROP CONSTRAINT order_operator_actions_action_check;
ALTER TABLE order_operator_actions ADD CONSTRAINT order_operator_actions_action_check
  CHECK (action IN ('refund', 'cancel', 'ack', 'retry', 'resolve', 'return'));
ALTER TABLE order_operator_actions ADD CONSTRAINT order_operator_actions_reasoned
  CHECK (action NOT IN ('refund', 'cancel', 'return') OR (reason IS NOT NULL AND operator_tenant IS NOT NULL)) NOT VALID;

-- Every wallet credit with who made it, why and under which Idempotency-Key. The idempotency key's
-- row is purged after its retention; this one is not. One row per credit transfer (its id is the
-- key's): a second operator sending the same key finds the first one's row and is refused.
CREATE TABLE wallet_credit_actions (
  tenant_id       text   NOT NULL,
  transfer_id     text   NOT NULL,
  user_id         text   NOT NULL,
  amount          bigint NOT NULL CHECK (amount > 0),
  operator        text   NOT NULL CHECK (char_length(operator) BETWEEN 1 AND 128),
  operator_tenant text   NOT NULL CHECK (char_length(operator_tenant) BETWEEN 1 AND 128),
  reason          text   NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
  at              timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, transfer_id)
);
CREATE INDEX wallet_credit_actions_user ON wallet_credit_actions (tenant_id, user_id, at);

-- Both trails are append-only: no UPDATE, no DELETE, no TRUNCATE, whoever asks (a correction is a
-- new row). As wallet_transfers (migration 050).
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit trail % is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER order_operator_actions_append_only BEFORE UPDATE OR DELETE ON order_operator_actions
  FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER order_operator_actions_no_truncate BEFORE TRUNCATE ON order_operator_actions
  FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER wallet_credit_actions_append_only BEFORE UPDATE OR DELETE ON wallet_credit_actions
  FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER wallet_credit_actions_no_truncate BEFORE TRUNCATE ON wallet_credit_actions
  FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

-- 2. Shipped units stay shipped. A refund of an order whose fulfilment is FULFILLED does not put its
--    units back on sale: they have left. Its reservations go CONFIRMED -> REFUNDED_SHIPPED (the row
--    alone: the SKU row's `held` still counts them out), and only an operator's audited return
--    (POST /v1/admin/orders/{id}/return) moves them REFUNDED_SHIPPED -> RELEASED, back on sale.
ALTER TABLE reservations DROP CONSTRAINT reservations_status_check;
ALTER TABLE reservations ADD CONSTRAINT reservations_status_check
  CHECK (status IN ('HELD', 'CONFIRMED', 'RELEASED', 'REFUNDED_SHIPPED'));

-- The few refunded-after-shipping units of a SKU, read by the view from this index alone.
CREATE INDEX reservations_refunded_shipped_by_sku ON reservations (tenant_id, sku) INCLUDE (quantity)
  WHERE status = 'REFUNDED_SHIPPED';

-- The view's counters gain `refunded_shipped` (out of stock, refunded, not returned); `held` stays
-- what it says: the HELD units. total = available + held + confirmed + refunded_shipped.
-- Each sum reads its own partial index (index-only), as migration 110's did.
CREATE OR REPLACE VIEW sku_counters AS
SELECT s.tenant_id, s.sku, s.total, s.available, s.held - c.confirmed - x.refunded_shipped AS held, c.confirmed,
       s.released, s.held AS out_units, x.refunded_shipped
FROM skus s
CROSS JOIN LATERAL (
  SELECT coalesce(sum(r.quantity), 0)::int AS confirmed FROM reservations r
  WHERE r.tenant_id = s.tenant_id AND r.sku = s.sku AND r.status = 'CONFIRMED'
) c
CROSS JOIN LATERAL (
  SELECT coalesce(sum(r.quantity), 0)::int AS refunded_shipped FROM reservations r
  WHERE r.tenant_id = s.tenant_id AND r.sku = s.sku AND r.status = 'REFUNDED_SHIPPED'
) x;
