-- Catalog and stock reservations (seed 000's "article 28" table).
-- The counters on skus are the source of truth for availability; the CHECK makes
-- total = available + held + confirmed hold at every commit, not just in tests.
CREATE TABLE skus (
  tenant_id      text    NOT NULL CHECK (char_length(tenant_id) BETWEEN 1 AND 128),
  sku            text    NOT NULL CHECK (char_length(sku) BETWEEN 1 AND 64),
  name           text    NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  price          bigint  NOT NULL CHECK (price >= 0),
  total          integer NOT NULL CHECK (total >= 0),
  available      integer NOT NULL CHECK (available >= 0),
  held           integer NOT NULL CHECK (held >= 0),
  confirmed      integer NOT NULL CHECK (confirmed >= 0),
  released       integer NOT NULL DEFAULT 0 CHECK (released >= 0),
  per_user_limit integer CHECK (per_user_limit > 0),
  hold_ttl_ms    integer NOT NULL CHECK (hold_ttl_ms > 0),
  created_at     timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, sku),
  CHECK (total = available + held + confirmed)
);

CREATE TABLE reservations (
  tenant_id   text    NOT NULL,
  request_key text    NOT NULL CHECK (char_length(request_key) BETWEEN 1 AND 300),
  user_id     text    NOT NULL,
  sku         text    NOT NULL,
  quantity    integer NOT NULL CHECK (quantity > 0),
  status      text    NOT NULL CHECK (status IN ('HELD', 'CONFIRMED', 'RELEASED')),
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, request_key),
  FOREIGN KEY (tenant_id, sku) REFERENCES skus (tenant_id, sku)
);
CREATE INDEX reservations_held_expiry ON reservations (expires_at) WHERE status = 'HELD';

-- Units a user holds or bought of a SKU; the per-user limit is a conditional upsert on this row.
CREATE TABLE user_holdings (
  tenant_id text    NOT NULL,
  sku       text    NOT NULL,
  user_id   text    NOT NULL,
  quantity  integer NOT NULL CHECK (quantity >= 0),
  PRIMARY KEY (tenant_id, sku, user_id)
);
