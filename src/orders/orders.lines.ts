import type { Executor, Tx } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import { exactTotal, isChargeableTotal, MAX_ORDER_AMOUNT_MINOR, toAmount } from '../platform/money.ts';
export { lineReservationKeyFor } from './orders.keys.ts';
import { lineReservationKeyFor } from './orders.keys.ts';
import type { Order } from './orders.types.ts';

// At most 20 lines per order (contract): one order never locks an unbounded number of SKU rows.
export const MAX_LINES = 20;

/** A line as the order snapshot it at placement, with the reservation that holds its units now. */
export interface OrderLine {
  lineNo: number;
  sku: string;
  name: string;
  unitPrice: number;
  quantity: number;
  amount: number;
  reservationKey: string;
}

/**
 * The exact total of an order of these lines at these prices (same order), in bigint: 20 lines of
 * 1,000 units at the top price are 2 × 10^16, past exact JavaScript numbers (issue 40), and far past
 * what the provider charges (issue 38). Answers the total, or undefined when it is past `maximum`:
 * the largest charge of the tenant's provider in its currency (issue 48, `maxOrderAmountOf` in
 * src/platform/provider.config.ts; the route reads it from the configuration, no query), never
 * above MAX_ORDER_AMOUNT_MINOR (src/platform/money.ts).
 */
export function chargeableTotal(
  lines: readonly { quantity: number }[],
  prices: readonly number[],
  maximum: number = MAX_ORDER_AMOUNT_MINOR,
): number | undefined {
  const total = exactTotal(lines.map((line, i) => ({ unitPrice: prices[i] ?? 0, quantity: line.quantity })));
  return isChargeableTotal(total, maximum) ? Number(total) : undefined;
}

/** The 400 for an order whose total the provider would refuse: before anything is reserved or written. */
export function refuseAmountTooLarge(
  lines: readonly { quantity: number }[],
  prices: readonly number[],
  maximum: number = MAX_ORDER_AMOUNT_MINOR,
): never {
  const total = exactTotal(lines.map((line, i) => ({ unitPrice: prices[i] ?? 0, quantity: line.quantity })));
  const limit = Math.min(maximum, MAX_ORDER_AMOUNT_MINOR);
  throw new AppError(
    'AMOUNT_TOO_LARGE',
    `the order's total of ${total} minor units is more than the ${limit} the payment provider accepts`,
    { field: 'body.lines', maximum: limit, amount: total.toString() },
  );
}

/** A new order's lines in canonical order, its names and prices snapshot from `skus` (same order). */
export function snapshotLines(
  orderId: string,
  sorted: readonly { sku: string; quantity: number }[],
  skus: readonly { name: string; price: number }[],
): OrderLine[] {
  return sorted.map((line, i) => {
    const sku = skus[i]!;
    return {
      lineNo: i + 1,
      sku: line.sku,
      name: sku.name,
      unitPrice: sku.price,
      quantity: line.quantity,
      amount: sku.price * line.quantity,
      reservationKey: lineReservationKeyFor(orderId, i + 1, 1),
    };
  });
}

/** A new order's own columns from its lines: line 1 names the SKU and its reservation, the amount is the sum. */
export function orderHead(orderId: string, owner: { tenantId: string; userId: string }, lines: readonly OrderLine[]) {
  const first = lines[0] as OrderLine;
  return {
    orderId,
    tenantId: owner.tenantId,
    userId: owner.userId,
    sku: first.sku,
    quantity: first.quantity,
    // Exact, and within the provider's limit: every create checked chargeableTotal first.
    amount: toAmount(exactTotal(lines)),
    reservationKey: first.reservationKey,
  };
}

/** The lines as the six column arrays an `unnest` insert of order_lines takes. */
export function lineColumns(lines: readonly Omit<OrderLine, 'amount'>[]) {
  return [
    lines.map((l) => l.lineNo),
    lines.map((l) => l.sku),
    lines.map((l) => l.name),
    lines.map((l) => l.unitPrice),
    lines.map((l) => l.quantity),
    lines.map((l) => l.reservationKey),
  ];
}

export async function insertLines(
  tx: Tx,
  order: { orderId: string; tenantId: string },
  lines: readonly OrderLine[],
): Promise<void> {
  await tx.query(
    `INSERT INTO order_lines (order_id, line_no, tenant_id, sku, name, unit_price, quantity, amount, reservation_key)
     SELECT $1, l.line_no, $2, l.sku, l.name, l.unit_price, l.quantity, l.unit_price * l.quantity, CASE WHEN l.line_no = 1 THEN NULL ELSE l.reservation_key END
     FROM unnest($3::int[], $4::text[], $5::text[], $6::bigint[], $7::int[], $8::text[]) AS l(line_no, sku, name, unit_price, quantity, reservation_key)`,
    [order.orderId, order.tenantId, ...lineColumns(lines)],
  );
}

/** The order's lines in line (= SKU) order; an order without line rows is read as its one line. */
export async function findLines(db: Executor, order: Order): Promise<OrderLine[]> {
  return (await findLinesOf(db, [order])).get(order.orderId) ?? [];
}

/** findLines for many orders in one read: order id → its lines. */
export async function findLinesOf(db: Executor, orders: readonly Order[]): Promise<Map<string, OrderLine[]>> {
  return linesOf(
    orders,
    await lineRowsOf(
      db,
      orders.map((o) => o.orderId),
    ),
  );
}

export interface LineRow {
  order_id: string;
  line_no: number;
  sku: string;
  name: string;
  unit_price: number;
  quantity: number;
  amount: number;
  reservation_key: string | null;
}

/** The line rows of these orders, by order and line; `linesOf` reads them with their orders. */
export async function lineRowsOf(db: Executor, orderIds: readonly string[]): Promise<LineRow[]> {
  const result = await db.query<LineRow>(
    'SELECT order_id, line_no, sku, name, unit_price, quantity, amount, reservation_key FROM order_lines WHERE order_id = ANY($1::text[]) ORDER BY order_id, line_no',
    [orderIds],
  );
  return result.rows;
}

/** Order id → its lines: an order without line rows is its one line; line 1's reservation is the order's. */
export function linesOf(orders: readonly Order[], rows: readonly LineRow[]): Map<string, OrderLine[]> {
  const byOrder = new Map<string, LineRow[]>();
  for (const r of rows) {
    const list = byOrder.get(r.order_id);
    if (list) list.push(r);
    else byOrder.set(r.order_id, [r]);
  }
  const out = new Map<string, OrderLine[]>();
  for (const order of orders) {
    const own = byOrder.get(order.orderId) ?? [];
    out.set(
      order.orderId,
      own.length === 0
        ? [
            {
              lineNo: 1,
              sku: order.sku,
              name: order.sku,
              unitPrice: Math.floor(order.amount / order.quantity),
              quantity: order.quantity,
              amount: order.amount,
              reservationKey: order.reservationKey,
            },
          ]
        : own.map((r) => ({
            lineNo: r.line_no,
            sku: r.sku,
            name: r.name,
            unitPrice: r.unit_price,
            quantity: r.quantity,
            amount: r.amount,
            reservationKey: r.reservation_key ?? order.reservationKey,
          })),
    );
  }
  return out;
}

/** A re-reserved line points at its new reservation; line 1's lives on the order row. */
export async function setLineReservation(
  tx: Tx,
  orderId: string,
  lineNo: number,
  key: string,
  attempt: number,
): Promise<void> {
  if (lineNo === 1)
    await tx.query('UPDATE orders SET reservation_key = $2, reserve_attempt = $3 WHERE order_id = $1', [
      orderId,
      key,
      attempt,
    ]);
  else {
    await tx.query('UPDATE order_lines SET reservation_key = $3 WHERE order_id = $1 AND line_no = $2', [
      orderId,
      lineNo,
      key,
    ]);
    await tx.query('UPDATE orders SET reserve_attempt = greatest(reserve_attempt, $2) WHERE order_id = $1', [
      orderId,
      attempt,
    ]);
  }
}

export function lineView(line: OrderLine) {
  return { sku: line.sku, name: line.name, unit_price: line.unitPrice, quantity: line.quantity, amount: line.amount };
}
