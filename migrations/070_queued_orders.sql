-- Queued orders (seed 004 part 2, docs/queued-orders.md): the shop answers 202 PENDING and a stock
-- service reserves behind a queue. Four tables, two per side, so each side could live in its own
-- database: the shop's request outbox and result inbox, the stock service's request inbox and
-- result outbox. Every message carries a key the far side deduplicates on.

-- New statuses. Compensation's (issue 17) are listed too so whichever migration runs last keeps both.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN (
  'PENDING', 'CREATED', 'REJECTED', 'PAYING', 'UNKNOWN', 'PAID', 'FAILED', 'RELEASING', 'CANCELLED',
  'REFUNDING', 'REFUNDED', 'COMPENSATING', 'COMPENSATION_PENDING', 'COMPENSATED'));
-- Placed with Prefer: respond-async: its units are moved by the stock service, never by the shop's create.
ALTER TABLE orders ADD COLUMN queued boolean NOT NULL DEFAULT false;
-- A PENDING order names the reservation keys the stock service will hold under; the rows exist
-- only once it answers RESERVED (and never for a REJECTED order), so these references go.
ALTER TABLE orders DROP CONSTRAINT orders_tenant_id_reservation_key_fkey;
ALTER TABLE order_lines DROP CONSTRAINT order_lines_tenant_id_reservation_key_fkey;

-- The shop's outbox of stock requests, written in the transaction that creates the PENDING order
-- (or enters RELEASING). One row per request key; the relay claims with SKIP LOCKED and a lease,
-- and every write after the claim is fenced by claimed_by.
CREATE TABLE stock_requests_out (
  request_key   text    PRIMARY KEY CHECK (char_length(request_key) BETWEEN 1 AND 300),
  order_id      text    NOT NULL REFERENCES orders (order_id),
  event_type    text    NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 64),
  payload       jsonb   NOT NULL,
  created_at    timestamptz NOT NULL,
  published_at  timestamptz,
  claimed_by    text,
  claimed_until timestamptz,
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text CHECK (char_length(last_error) <= 2000),
  dead_at       timestamptz
);
CREATE INDEX stock_requests_out_pending ON stock_requests_out (created_at) WHERE published_at IS NULL AND dead_at IS NULL;

-- The shop's inbox of stock results: one row per result event id, with what it did to the order.
CREATE TABLE stock_results_in (
  event_id    text PRIMARY KEY CHECK (char_length(event_id) BETWEEN 1 AND 128),
  order_id    text NOT NULL CHECK (char_length(order_id) BETWEEN 1 AND 64),
  event_type  text NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 64),
  effect      text NOT NULL CHECK (effect IN ('APPLIED', 'IGNORED', 'UNKNOWN_ORDER')),
  detail      text CHECK (char_length(detail) <= 2000),
  received_at timestamptz NOT NULL
);
CREATE INDEX stock_results_in_order ON stock_results_in (order_id);

-- The stock service's inbox: one row per request key, applied at most once; `result` is the first
-- answer, replayed to every duplicate. `seq` is arrival order. An unknown type is parked, not applied.
CREATE TABLE stock_inbox (
  request_key text    PRIMARY KEY CHECK (char_length(request_key) BETWEEN 1 AND 300),
  seq         bigserial UNIQUE,
  event_type  text    NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 64),
  order_id    text    NOT NULL CHECK (char_length(order_id) BETWEEN 1 AND 64),
  payload     jsonb   NOT NULL,
  received_at timestamptz NOT NULL,
  deliveries  integer NOT NULL DEFAULT 1,
  applied_at  timestamptz,
  result_type text,
  result      jsonb,
  parked_at   timestamptz,
  error       text CHECK (char_length(error) <= 2000),
  CHECK ((applied_at IS NULL) = (result IS NULL))
);
CREATE INDEX stock_inbox_todo ON stock_inbox (seq) WHERE applied_at IS NULL AND parked_at IS NULL;

-- The stock service's outbox of results (one per applied request, plus a replay per duplicate).
CREATE TABLE stock_outbox (
  event_id      bigserial PRIMARY KEY,
  request_key   text    NOT NULL,
  order_id      text    NOT NULL,
  event_type    text    NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 64),
  payload       jsonb   NOT NULL,
  created_at    timestamptz NOT NULL,
  published_at  timestamptz,
  claimed_by    text,
  claimed_until timestamptz,
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text CHECK (char_length(last_error) <= 2000),
  dead_at       timestamptz
);
CREATE INDEX stock_outbox_pending ON stock_outbox (event_id) WHERE published_at IS NULL AND dead_at IS NULL;
