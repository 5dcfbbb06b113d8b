-- Issue 16 (P4): relays wake on an insert instead of waiting out their polling interval.
-- A statement-level trigger, so a transaction that writes several outbox rows notifies once; the
-- payload is empty because the relay claims whatever is due anyway (a NOTIFY is only "look now").
-- PostgreSQL folds identical notifications of one transaction and delivers them at COMMIT, so a
-- relay never wakes for a row it cannot see yet. Polling stays as the fallback (a listener that
-- is reconnecting misses notifications). Cost: a notifying COMMIT takes the notification queue's
-- lock, which serializes such commits briefly; outbox rows are written only on terminal
-- transitions (PAID, FAILED, CANCELLED, REFUNDED), not on the create path.
CREATE FUNCTION flashpay_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('flashpay_outbox', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
  FOR EACH STATEMENT EXECUTE FUNCTION flashpay_outbox_notify();
