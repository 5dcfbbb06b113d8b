-- Incremental reconciliation (docs/reconciliation.md, "Incremental passes"): what the last pass
-- covered, so the next one reads only what changed since.

-- The change feed on our side: every order change that matters to reconciliation writes a
-- transition row, stamped with the writing transaction's id. A pass remembers the snapshot it read
-- in; the next one reads the transitions whose transaction that snapshot did not see (committed
-- since, whatever their order of commit) — a sequence or a timestamp would skip a transaction that
-- took its number early and committed late. Rows written before this column existed are NULL:
-- the first pass is a full one.
ALTER TABLE order_transitions ADD COLUMN recon_xid xid8;
ALTER TABLE order_transitions ALTER COLUMN recon_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX order_transitions_recon_xid ON order_transitions (recon_xid);

-- One row: the provider statement's cursor, the snapshot of our side, and the running totals.
-- `version` guards it: a pass writes it only if nobody did since it read it (two passes at once).
CREATE TABLE reconcile_cursor (
  id                 smallint PRIMARY KEY CHECK (id = 1),
  version            bigint NOT NULL DEFAULT 0,
  statement_after    text,
  orders_snapshot    pg_snapshot,
  channel_net        bigint NOT NULL DEFAULT 0,
  paid_sum           bigint NOT NULL DEFAULT 0,
  paid               integer NOT NULL DEFAULT 0,
  paid_lines         integer NOT NULL DEFAULT 0,
  compensating_lines integer NOT NULL DEFAULT 0,
  statuses           jsonb NOT NULL DEFAULT '{}',
  passes             bigint NOT NULL DEFAULT 0,
  full_at            timestamptz,
  updated_at         timestamptz NOT NULL DEFAULT now()
);

-- Per order, what the last pass counted it as (status, amount, lines: the totals' terms) and the
-- provider lines seen for it so far (folded, as the rules read them). `open`: pending or
-- mismatched, so the next pass checks it again even if nothing about it changed. A row with a NULL
-- status is a provider line for an order we do not have.
CREATE TABLE reconcile_orders (
  order_id  text PRIMARY KEY,
  status    text,
  amount    bigint NOT NULL DEFAULT 0,
  lines     integer NOT NULL DEFAULT 0,
  charges   integer NOT NULL DEFAULT 0,
  charged   bigint NOT NULL DEFAULT 0,
  refunds   integer NOT NULL DEFAULT 0,
  refunded  bigint NOT NULL DEFAULT 0,
  open      boolean NOT NULL DEFAULT false
);
CREATE INDEX reconcile_orders_open ON reconcile_orders (order_id) WHERE open;
