-- The fulfillment consumer's own tables (it is a separate service that happens to share the
-- database instance, so no foreign keys into orders). Two checks absorb at-least-once delivery:
-- ful_inbox drops an event_id seen before (DUPLICATE); fulfillment.last_version only moves forward (STALE).
CREATE TABLE ful_inbox (
  event_id    text PRIMARY KEY CHECK (char_length(event_id) BETWEEN 1 AND 64),
  received_at timestamptz NOT NULL
);

CREATE TABLE fulfillment (
  order_id        text    PRIMARY KEY CHECK (char_length(order_id) BETWEEN 1 AND 64),
  last_version    integer NOT NULL CHECK (last_version > 0),
  last_event_type text    NOT NULL CHECK (char_length(last_event_type) BETWEEN 1 AND 64),
  ship_count      integer NOT NULL CHECK (ship_count >= 0),
  updated_at      timestamptz NOT NULL
);
-- integrity: "duplicate shipments" is a scan of this partial index, normally empty.
CREATE INDEX fulfillment_shipped_twice ON fulfillment (order_id) WHERE ship_count > 1;

-- Every arrival and what it did. ERROR rows record an arrival whose effect transaction failed
-- (the sender retries it); they carry no effect.
CREATE TABLE ful_received (
  id         bigserial PRIMARY KEY,
  event_id   text    NOT NULL CHECK (char_length(event_id) BETWEEN 1 AND 64),
  order_id   text    NOT NULL CHECK (char_length(order_id) BETWEEN 1 AND 64),
  event_type text    NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 64),
  version    integer NOT NULL,
  effect     text    NOT NULL CHECK (effect IN ('APPLIED', 'DUPLICATE', 'STALE', 'ERROR')),
  detail     text    CHECK (char_length(detail) <= 2000),
  at         timestamptz NOT NULL
);
CREATE INDEX ful_received_order ON ful_received (order_id, id);
