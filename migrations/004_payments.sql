-- Every provider notification, with the effect it had (or had not) on the order.
CREATE TABLE payment_notifications (
  id             bigserial PRIMARY KEY,
  notify_id      text    NOT NULL CHECK (char_length(notify_id) BETWEEN 1 AND 128),
  merchant_order text    NOT NULL CHECK (char_length(merchant_order) BETWEEN 1 AND 128),
  kind           text    NOT NULL CHECK (kind IN ('CHARGED', 'DECLINED', 'REFUNDED')),
  amount         bigint  NOT NULL CHECK (amount >= 0),
  txn            text,
  effect         text    NOT NULL,
  -- set when the notification contradicts the order and a person should look (REFUNDED for a PAID order)
  needs_attention boolean NOT NULL DEFAULT false,
  received_at    timestamptz NOT NULL
);
CREATE INDEX payment_notifications_order ON payment_notifications (merchant_order, id);

-- Recovery bookkeeping: a claim so several recovery processes divide the work, and a note for a
-- human when an order cannot converge on its own (it is then retried slowly, not hot).
ALTER TABLE orders
  ADD COLUMN recovery_claimed_until timestamptz,
  ADD COLUMN recovery_attempts integer NOT NULL DEFAULT 0,
  ADD COLUMN next_recovery_at timestamptz,
  ADD COLUMN attention text;
