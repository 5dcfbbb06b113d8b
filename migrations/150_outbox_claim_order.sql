-- The relay's claim (outbox.repo.ts claimSql) takes the oldest due events: ORDER BY event_id LIMIT
-- n. outbox_pending (002) is in (next_attempt_at, event_id) order, so the claim read every due
-- event, checked each one's earlier versions, sorted them and kept n: O(backlog) per claim, 2.7 ms
-- for 50 of 10,000. In event_id order it stops after n (a backed-off event is skipped by the filter,
-- and outbox_pending still serves the reads by next_attempt_at).
CREATE INDEX outbox_pending_by_id ON outbox (event_id) WHERE published_at IS NULL AND dead_at IS NULL;
