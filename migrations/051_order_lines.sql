-- Orders of several lines (seed 004): each line's name and unit price as they were when the order
-- was placed ("后面改价不影响这张单"). Lines are numbered in SKU order, the order every
-- reservation, confirm and release of the order takes its SKU locks in.
-- Line 1's reservation stays in orders.reservation_key (the one-line schema, which every existing
-- reader uses); lines 2..20 keep theirs here.
CREATE TABLE order_lines (
  order_id        text    NOT NULL REFERENCES orders (order_id),
  line_no         integer NOT NULL CHECK (line_no BETWEEN 1 AND 20),
  tenant_id       text    NOT NULL,
  sku             text    NOT NULL,
  name            text    NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  unit_price      bigint  NOT NULL CHECK (unit_price >= 0),
  quantity        integer NOT NULL CHECK (quantity > 0),
  amount          bigint  NOT NULL,
  reservation_key text,
  PRIMARY KEY (order_id, line_no),
  UNIQUE (order_id, sku),
  CHECK (amount = unit_price * quantity),
  CHECK ((line_no = 1) = (reservation_key IS NULL)),
  FOREIGN KEY (tenant_id, reservation_key) REFERENCES reservations (tenant_id, request_key)
);
CREATE INDEX order_lines_reservation ON order_lines (tenant_id, reservation_key) WHERE reservation_key IS NOT NULL;

-- Orders placed before lines existed are one-line orders; their snapshot is what they were charged.
INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount)
SELECT o.order_id, 1, o.tenant_id, o.sku, s.name, o.amount / o.quantity, o.quantity, o.amount
FROM orders o JOIN skus s ON s.tenant_id = o.tenant_id AND s.sku = o.sku
WHERE o.amount % o.quantity = 0;
