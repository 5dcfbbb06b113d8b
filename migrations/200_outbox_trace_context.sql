-- Issue 53: an outbox row keeps the trace context of the transition that wrote it, so that the
-- relay, the broker message and the consumer continue that trace. A transaction run while tracing
-- is on sets `flashpay.traceparent` (SET LOCAL, src/platform/tracing.db.ts) to its span's W3C
-- traceparent; the column's default reads it, so no writer of the outbox changes. NULL when tracing
-- is off (the setting is then never set: current_setting(…, true) answers NULL, or '' in a session
-- that set it in an earlier transaction).
ALTER TABLE outbox
  ADD COLUMN traceparent text
    DEFAULT nullif(current_setting('flashpay.traceparent', true), '')
    CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
