-- Issue 52: what recovery last learnt about an order it is still chasing, for the person on call.
-- The order's own bookkeeping (attempt count, backoff, claim) stays on `orders`; this table is
-- recovery's, written once per claimed batch after that bookkeeping, and holds only orders whose
-- last attempt left them unfinished (a converged order's row is deleted by the same statement).
CREATE TABLE recovery_attempts (
  -- No foreign key: its KEY SHARE lock would make recovery's write wait on an order a pay holds.
  order_id        text        PRIMARY KEY,
  attempted_at    timestamptz NOT NULL,
  -- What the provider or the database said; bounded (a provider's raw body can be long).
  last_error      text        NOT NULL CHECK (char_length(last_error) <= 2000),
  -- When the order is next claimable: its backoff, or NULL when the next pass takes it.
  next_attempt_at timestamptz
);
