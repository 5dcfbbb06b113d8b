-- Issue 38: the fake provider's customer accounts (seed 002's balances) were kept in memory, so a
-- restarted channel forgot every balance and charged a customer it had refused before. They live
-- with the channel's ledger now. The channel keeps its tables in its own database and applies this
-- file there itself (src/channel/ledger.pg.ts, idempotent); migrating the service's database creates
-- them too, where a channel sharing that database finds them.
CREATE TABLE IF NOT EXISTS channel_accounts (
  customer text PRIMARY KEY CHECK (char_length(customer) BETWEEN 1 AND 255),
  balance  bigint NOT NULL CHECK (balance >= 0)
);
-- Whom each charge of a customer with an account was taken from, so its refund gives back to them
-- once (given_back), whatever the number of refund requests.
CREATE TABLE IF NOT EXISTS channel_account_charges (
  merchant_order text PRIMARY KEY CHECK (char_length(merchant_order) BETWEEN 1 AND 255),
  customer       text NOT NULL REFERENCES channel_accounts (customer) ON DELETE CASCADE,
  amount         bigint NOT NULL CHECK (amount > 0),
  given_back     boolean NOT NULL DEFAULT false
);
