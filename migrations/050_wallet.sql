-- The wallet: a double-entry ledger (seed 004). Modelled on TigerBeetle's accounts and transfers
-- (immutable transfers with a caller-given id, at most one per id; an account flag that forbids
-- debits beyond credits) and Formance's "@world" (one account per tenant that may go negative, the
-- source of every credit). See docs/wallet.md.
CREATE TABLE wallet_accounts (
  tenant_id  text   NOT NULL CHECK (char_length(tenant_id) BETWEEN 1 AND 128),
  account_id text   NOT NULL CHECK (char_length(account_id) BETWEEN 1 AND 200),
  kind       text   NOT NULL CHECK (kind IN ('USER', 'REVENUE', 'FUNDING')),
  user_id    text,
  -- credits - debits, kept in the same transaction as every transfer that touches it.
  balance    bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, account_id),
  CHECK ((kind = 'USER') = (user_id IS NOT NULL)),
  -- No overdraft, enforced by the database whatever the code does: a buyer's wallet and the
  -- revenue account never go below zero; only FUNDING (Formance's @world) may.
  CHECK (kind = 'FUNDING' OR balance >= 0)
);

CREATE TABLE wallet_transfers (
  tenant_id      text   NOT NULL,
  transfer_id    text   NOT NULL CHECK (char_length(transfer_id) BETWEEN 1 AND 300),
  debit_account  text   NOT NULL,
  credit_account text   NOT NULL,
  amount         bigint NOT NULL CHECK (amount > 0),
  kind           text   NOT NULL CHECK (kind IN ('CREDIT', 'DEBIT', 'REFUND')),
  user_id        text   NOT NULL,
  order_id       text,
  at             timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, transfer_id),
  CHECK (debit_account <> credit_account),
  FOREIGN KEY (tenant_id, debit_account) REFERENCES wallet_accounts (tenant_id, account_id),
  FOREIGN KEY (tenant_id, credit_account) REFERENCES wallet_accounts (tenant_id, account_id)
);
CREATE INDEX wallet_transfers_user ON wallet_transfers (tenant_id, user_id, at);
CREATE INDEX wallet_transfers_order ON wallet_transfers (order_id) WHERE order_id IS NOT NULL;

-- Transfers are immutable: no UPDATE, no DELETE, ever (a correction is a new transfer).
CREATE FUNCTION wallet_transfers_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'wallet transfers are immutable';
END $$;
CREATE TRIGGER wallet_transfers_immutable BEFORE UPDATE OR DELETE ON wallet_transfers
  FOR EACH ROW EXECUTE FUNCTION wallet_transfers_immutable();
