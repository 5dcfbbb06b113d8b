-- Seed 002: the order's life after PAID as a saga. The status list is the contract's full list
-- (issue 13 adds PENDING, REJECTED and RELEASING in parallel; both migrations agree on it).
ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('PENDING', 'CREATED', 'REJECTED', 'PAYING', 'UNKNOWN', 'PAID', 'FAILED', 'RELEASING',
  'CANCELLED', 'REFUNDING', 'REFUNDED', 'COMPENSATING', 'COMPENSATION_PENDING', 'COMPENSATED'));

-- Fulfilment is a dimension of its own (as in Medusa and Saleor): a fulfilled order stays PAID.
ALTER TABLE orders
  ADD COLUMN fulfilment_status text NOT NULL DEFAULT 'PENDING' CHECK (fulfilment_status IN ('PENDING', 'FULFILLED', 'REFUSED')),
  ADD COLUMN fulfilment_ref text;
CREATE INDEX orders_unfulfilled ON orders (updated_at) WHERE status = 'PAID' AND fulfilment_status = 'PENDING';

-- One saga per order: the runner's schedule (claim, backoff, deadline), never the business state
-- (that is the order's status).
CREATE TABLE sagas (
  saga_id         text PRIMARY KEY CHECK (char_length(saga_id) BETWEEN 1 AND 64),
  flow            text NOT NULL CHECK (char_length(flow) BETWEEN 1 AND 64),
  state           text NOT NULL CHECK (state IN ('FORWARD', 'COMPENSATING', 'DONE', 'COMPENSATED')),
  attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL,
  deadline_at     timestamptz NOT NULL,
  claimed_until   timestamptz,
  attention       text,
  started_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX sagas_due ON sagas (next_attempt_at) WHERE state IN ('FORWARD', 'COMPENSATING');

-- The journal: one row per step attempt. STARTED is committed before an external call (so a crash
-- after the call leaves "outcome unknown" on disk), then settled in the same transaction as the
-- step's local effect. At most one DONE per (saga, step, direction): the per-(key, step) idempotency.
CREATE TABLE saga_journal (
  seq             bigserial PRIMARY KEY,
  saga_id         text NOT NULL REFERENCES sagas (saga_id),
  step            text NOT NULL CHECK (char_length(step) BETWEEN 1 AND 64),
  direction       text NOT NULL CHECK (direction IN ('do', 'undo')),
  key             text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
  status          text NOT NULL CHECK (status IN ('STARTED', 'DONE', 'REFUSED', 'FAILED', 'UNKNOWN')),
  receipt         text CHECK (char_length(receipt) <= 500),
  error           text CHECK (char_length(error) <= 500),
  next_attempt_at timestamptz,
  at              timestamptz NOT NULL
);
CREATE INDEX saga_journal_saga ON saga_journal (saga_id, seq);
CREATE UNIQUE INDEX saga_journal_done_once ON saga_journal (saga_id, step, direction) WHERE status = 'DONE';
