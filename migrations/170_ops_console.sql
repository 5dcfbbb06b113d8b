-- Issue 36, the operator console: keyset search, the note for a person (since when, which version of
-- the order it is about, its acknowledgement) and the operators' actions on an order.

-- GET /v1/admin/orders pages a tenant's orders newest first by (created_at, order_id).
CREATE INDEX orders_tenant_created ON orders (tenant_id, created_at DESC, order_id DESC);
-- `q` may be an Idempotency-Key (without its user) or a provider transaction id.
-- The key leads: an index led by tenant_id alone would tempt the create batches' cached plans into
-- reading every key of the tenant per probe (PLAN-01 caught 1.2 million entries for 40 buyers).
CREATE INDEX idempotency_keys_key_tenant ON idempotency_keys (idempotency_key, tenant_id);
CREATE INDEX payment_notifications_txn ON payment_notifications (txn) WHERE txn IS NOT NULL;

ALTER TABLE orders
  ADD COLUMN attention_since timestamptz,
  -- The order's version when the note was written: once the order has moved on (a transition bumps
  -- the version), it converged and the note is no longer listed (GET /v1/admin/attention).
  ADD COLUMN attention_version integer,
  ADD COLUMN attention_acked_by text CHECK (char_length(attention_acked_by) BETWEEN 1 AND 128),
  ADD COLUMN attention_acked_at timestamptz;

-- Notes written before this migration are about the order as it is now.
UPDATE orders SET attention_since = updated_at, attention_version = version WHERE attention IS NOT NULL;

-- The writers of a note (the decider's notes, recovery's "cannot converge …") set only `attention`;
-- this keeps the bookkeeping beside it without touching them. Fires only for an UPDATE that names
-- `attention` and changes it: transitions and the pays' statements never do.
-- A new problem (a note where there was none, or a note of another kind) needs a new acknowledgement;
-- recovery's own note rewritten with its attempt count keeps its first time and its acknowledgement.
CREATE FUNCTION orders_attention_noted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.attention IS NULL THEN
    NEW.attention_since := NULL;
    NEW.attention_version := NULL;
    NEW.attention_acked_by := NULL;
    NEW.attention_acked_at := NULL;
  ELSE
    NEW.attention_version := NEW.version;
    IF OLD.attention IS NULL OR NOT (OLD.attention LIKE 'cannot converge%' AND NEW.attention LIKE 'cannot converge%') THEN
      NEW.attention_since := statement_timestamp();
      NEW.attention_acked_by := NULL;
      NEW.attention_acked_at := NULL;
    END IF;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER orders_attention_noted BEFORE UPDATE OF attention ON orders
  FOR EACH ROW WHEN (NEW.attention IS DISTINCT FROM OLD.attention) EXECUTE FUNCTION orders_attention_noted();

-- What GET /v1/admin/attention reads: notes not acknowledged (few rows).
CREATE INDEX orders_attention_open ON orders (tenant_id) WHERE attention IS NOT NULL AND attention_acked_at IS NULL;

-- Every operator action on an order (refund, cancel, acknowledge, retry, resolve by hand) with the operator's `sub`:
-- shown in the order's timeline beside its transitions.
CREATE TABLE order_operator_actions (
  id        bigserial PRIMARY KEY,
  order_id  text    NOT NULL REFERENCES orders (order_id),
  action    text    NOT NULL CHECK (action IN ('refund', 'cancel', 'ack', 'retry', 'resolve')),
  operator  text    NOT NULL CHECK (char_length(operator) BETWEEN 1 AND 128),
  status    text    NOT NULL,
  version   integer NOT NULL,
  note      text    CHECK (char_length(note) <= 500),
  at        timestamptz NOT NULL
);
CREATE INDEX order_operator_actions_order ON order_operator_actions (order_id, id);
