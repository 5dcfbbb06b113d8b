-- Issue 38: orders of several lines end to end.
-- Per-SKU reports count an order under every SKU it holds, line 1 (orders.sku) or any other line.
CREATE INDEX order_lines_tenant_sku ON order_lines (tenant_id, sku);

-- The fulfilment consumer ships every line of an ORDER_PAID event, not the order row's first SKU:
-- what it shipped, [{sku, quantity}, …] as the event named them, set by the event that shipped it.
ALTER TABLE fulfillment ADD COLUMN shipped_lines jsonb
  CHECK (shipped_lines IS NULL OR (jsonb_typeof(shipped_lines) = 'array' AND jsonb_array_length(shipped_lines) BETWEEN 1 AND 20));
