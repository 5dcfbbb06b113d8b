-- Issue 38: an order's total is at most what the payment provider accepts for one charge
-- (MAX_ORDER_AMOUNT_MINOR in src/platform/money.ts: the fake channel refuses more than 10^12 minor
-- units). Creation refuses larger totals with 400 AMOUNT_TOO_LARGE; this holds every other writer
-- to it. NOT VALID: rows written before are not scanned (none can be charged anyway); every new
-- or updated row is checked. tests/orders/amounts.test.ts checks the bound equals the constant.
ALTER TABLE orders ADD CONSTRAINT orders_amount_within_provider_limit
  CHECK (amount >= 0 AND amount <= 1000000000000) NOT VALID;
ALTER TABLE order_lines ADD CONSTRAINT order_lines_amount_within_provider_limit
  CHECK (amount >= 0 AND amount <= 1000000000000) NOT VALID;
