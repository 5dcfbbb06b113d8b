-- Issue 38 item 3: a wallet pay commits alone (one transaction with its key, no provider call),
-- and a notifying COMMIT takes the notification queue's lock, which serialized thousands of
-- concurrent wallet pays behind one another (W1 in `npm run bench -- --only wallet`). A transaction
-- that sets `flashpay.outbox_quiet` (SET LOCAL, its own transaction only) does not NOTIFY: it wakes
-- the relay of its own process after its commit instead, and the other processes' relays find the
-- event on their next poll (FLASHPAY_RELAY_INTERVAL_MS, 200 ms by default) — the fallback that was
-- always there for a listener that is reconnecting. Every other writer notifies as before.
CREATE OR REPLACE FUNCTION flashpay_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(current_setting('flashpay.outbox_quiet', true), '') <> 'on' THEN
    PERFORM pg_notify('flashpay_outbox', '');
  END IF;
  RETURN NULL;
END
$$;
