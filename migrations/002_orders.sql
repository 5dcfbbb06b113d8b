-- Orders, their transition log, and the outbox written in the same transaction as a terminal transition.
CREATE TABLE orders (
  order_id        text    PRIMARY KEY CHECK (char_length(order_id) BETWEEN 1 AND 64),
  tenant_id       text    NOT NULL,
  user_id         text    NOT NULL,
  sku             text    NOT NULL,
  quantity        integer NOT NULL CHECK (quantity > 0),
  amount          bigint  NOT NULL CHECK (amount >= 0),
  status          text    NOT NULL CHECK (status IN ('CREATED', 'PAYING', 'UNKNOWN', 'PAID', 'FAILED', 'CANCELLED', 'REFUNDING', 'REFUNDED')),
  version         integer NOT NULL CHECK (version > 0),
  reservation_key text    NOT NULL,
  reserve_attempt integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  FOREIGN KEY (tenant_id, reservation_key) REFERENCES reservations (tenant_id, request_key)
);
CREATE INDEX orders_unfinished ON orders (status, updated_at) WHERE status IN ('CREATED', 'PAYING', 'UNKNOWN', 'REFUNDING');
CREATE INDEX orders_tenant_user ON orders (tenant_id, user_id);

CREATE TABLE order_transitions (
  id          bigserial PRIMARY KEY,
  order_id    text    NOT NULL REFERENCES orders (order_id),
  from_status text,
  to_status   text    NOT NULL,
  version     integer NOT NULL,
  reason      text    NOT NULL,
  at          timestamptz NOT NULL,
  UNIQUE (order_id, version)
);

CREATE TABLE outbox (
  event_id        bigserial PRIMARY KEY,
  order_id        text    NOT NULL REFERENCES orders (order_id),
  event_type      text    NOT NULL,
  order_version   integer NOT NULL,
  payload         jsonb   NOT NULL,
  created_at      timestamptz NOT NULL,
  published_at    timestamptz,
  claimed_by      text,
  claimed_until   timestamptz,
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  last_error      text,
  dead_at         timestamptz,
  UNIQUE (order_id, order_version)
);
CREATE INDEX outbox_pending ON outbox (next_attempt_at, event_id) WHERE published_at IS NULL AND dead_at IS NULL;
