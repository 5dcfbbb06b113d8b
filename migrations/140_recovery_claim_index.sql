-- Recovery's claim (orders.recovery.ts claimUnfinished) and its count read the orders still to
-- converge. orders_unfinished (002) lists CREATED, PAYING, UNKNOWN and REFUNDING; PENDING and
-- RELEASING (seed 004) came later, so the count could not use it, and the claim's spelling did not
-- imply its predicate: both read every order (a sequential scan, 26 ms per claim at 100,000 orders;
-- 0.3 ms with this index). In updated_at order, so the claim's "oldest first, LIMIT 200" stops early.
CREATE INDEX orders_open ON orders (updated_at)
  WHERE status IN ('PAYING', 'UNKNOWN', 'REFUNDING', 'PENDING', 'RELEASING');
