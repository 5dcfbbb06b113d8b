-- Idempotency keys (seed 001). The key row is written in the same transaction as the effect it
-- guards; PROCESSING is only ever visible to others for /pay, whose effect spans three commits.
CREATE TABLE idempotency_keys (
  tenant_id         text    NOT NULL,
  user_id           text    NOT NULL,
  operation         text    NOT NULL CHECK (char_length(operation) BETWEEN 1 AND 40),
  idempotency_key   text    NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  request_digest    text    NOT NULL CHECK (char_length(request_digest) = 64),
  state             text    NOT NULL CHECK (state IN ('PROCESSING', 'DONE')),
  response_status   integer,
  response_body     text,
  response_location text,
  locked_until      timestamptz,
  created_at        timestamptz NOT NULL,
  completed_at      timestamptz,
  PRIMARY KEY (tenant_id, user_id, operation, idempotency_key),
  CHECK ((state = 'PROCESSING') = (response_status IS NULL))
);
CREATE INDEX idempotency_keys_completed ON idempotency_keys (completed_at) WHERE state = 'DONE';
