-- The relay's claim walks pending events in event_id order (ORDER BY event_id LIMIT batch). Without
-- an index in that order it walked the primary key from the oldest row and filtered out every
-- published one on the way: a claim cost grew with the table (EXPLAIN ANALYZE with 5,000 published
-- ahead of 5,000 pending: 5,000 rows removed by filter, 6.9 ms; docs/benchmarks.md §8D). This
-- partial index holds only what is still to be delivered, so a claim reads about `batch` entries.
-- outbox_pending (next_attempt_at, event_id) stays: the drain's bringDueForward and the lag use it.
CREATE INDEX outbox_claimable ON outbox (event_id) WHERE published_at IS NULL AND dead_at IS NULL;
