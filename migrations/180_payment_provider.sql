-- Issue 48: a payment belongs to a provider. The provider an order's payment was sent to is
-- recorded by the pay's CREATED → PAYING transition (the statement the pay runs anyway), and the
-- provider's own payment id (a Stripe PaymentIntent `pi_…`, an Alipay `trade_no`, the fake channel's
-- txn) by the transition that learns it (a charge reply, a query, a notification). Orders paid before
-- this migration have neither: their calls go to their tenant's provider, as before.
ALTER TABLE orders
  ADD COLUMN payment_provider text CHECK (payment_provider IN ('fake', 'stripe', 'alipay')),
  ADD COLUMN provider_payment_id text CHECK (char_length(provider_payment_id) BETWEEN 1 AND 128);

-- One provider payment settles at most one order: a notification naming a payment id bound to
-- another order changes nothing (src/payments/notifications.ts); two binding it at once, one fails.
CREATE UNIQUE INDEX orders_provider_payment ON orders (payment_provider, provider_payment_id)
  WHERE provider_payment_id IS NOT NULL;

-- Notifications are deduplicated per (provider, notify_id): an Alipay notify_id that equals a Stripe
-- event id is another notification. Rows recorded before this migration keep provider NULL and are
-- still found by their notify_id alone (recordedEffect), so a late copy of one stays a DUPLICATE.
ALTER TABLE payment_notifications
  ADD COLUMN provider text CHECK (provider IN ('fake', 'stripe', 'alipay'));
DROP INDEX payment_notifications_notify_id;
CREATE UNIQUE INDEX payment_notifications_provider_notify_id ON payment_notifications (provider, notify_id);
CREATE INDEX payment_notifications_legacy_notify_id ON payment_notifications (notify_id) WHERE provider IS NULL;
