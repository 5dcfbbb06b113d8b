import type { Executor, Tx } from '../platform/db.ts';
import { invariant } from '../platform/errors.ts';
import { mutant } from '../platform/mutations.ts';
import { EVENT_STATUSES, isAllowed, type OrderStatus } from './decide/states.ts';
import type { Order, TimelineEntry } from './orders.types.ts';

interface OrderRow {
  order_id: string;
  tenant_id: string;
  user_id: string;
  sku: string;
  quantity: number;
  amount: number;
  status: OrderStatus;
  version: number;
  reservation_key: string;
  reserve_attempt: number;
  fulfilment_status?: 'PENDING' | 'FULFILLED' | 'REFUSED';
  fulfilment_ref?: string | null;
  queued?: boolean;
  payment_provider?: string | null;
  provider_payment_id?: string | null;
  created_at: Date;
  updated_at: Date;
}

function toOrder(row: OrderRow): Order {
  return {
    orderId: row.order_id,
    tenantId: row.tenant_id,
    userId: row.user_id,
    sku: row.sku,
    quantity: row.quantity,
    amount: row.amount,
    status: row.status,
    version: row.version,
    reservationKey: row.reservation_key,
    reserveAttempt: row.reserve_attempt,
    fulfilmentStatus: row.fulfilment_status ?? 'PENDING',
    fulfilmentRef: row.fulfilment_ref ?? null,
    ...(row.queued ? { queued: true } : {}),
    paymentProvider: row.payment_provider ?? null,
    providerPaymentId: row.provider_payment_id ?? null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export { newOrderId, reservationKeyFor } from './orders.keys.ts';

export interface NewOrder {
  orderId: string;
  tenantId: string;
  userId: string;
  sku: string;
  quantity: number;
  amount: number;
  reservationKey: string;
}

/** The order and the first row of its transition log, in one statement. */
export async function insertOrder(tx: Tx, order: NewOrder, now: Date): Promise<void> {
  await tx.query({
    name: 'order-insert',
    text: `WITH o AS (
       INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'CREATED', 1, $7, $8, $8) RETURNING order_id)
     INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at) SELECT order_id, NULL, 'CREATED', 1, 'create', $8 FROM o`,
    values: [
      order.orderId,
      order.tenantId,
      order.userId,
      order.sku,
      order.quantity,
      order.amount,
      order.reservationKey,
      now,
    ],
  });
}

export async function findOrder(db: Executor, orderId: string): Promise<Order | undefined> {
  const result = await db.query<OrderRow>('SELECT * FROM orders WHERE order_id = $1', [orderId]);
  return result.rows[0] ? toOrder(result.rows[0]) : undefined;
}

/** Many orders read at once, without a lock (a pass that examines a batch). */
export async function findOrders(db: Executor, orderIds: readonly string[]): Promise<Map<string, Order>> {
  const result = await db.query<OrderRow>('SELECT * FROM orders WHERE order_id = ANY($1::text[])', [orderIds]);
  return new Map(result.rows.map((row) => [row.order_id, toOrder(row)]));
}

/**
 * An order, unlocked, with the order a provider's payment id is bound to (index
 * orders_provider_payment), in one statement: what a notification is judged by (issue 48).
 */
export async function findOrderForPayment(
  db: Executor,
  orderId: string,
  provider: string,
  paymentId: string | null,
): Promise<{ order?: Order; boundTo?: string }> {
  const result = await db.query<OrderRow & { bound_to: string | null }>(
    `SELECT o.*, (SELECT b.order_id FROM orders b
                  WHERE b.payment_provider = $2 AND b.provider_payment_id = $3 LIMIT 1) AS bound_to
     FROM orders o WHERE o.order_id = $1`,
    [orderId, provider, paymentId],
  );
  const row = result.rows[0];
  if (!row) return {};
  return { order: toOrder(row), ...(row.bound_to !== null ? { boundTo: row.bound_to } : {}) };
}

/** The order lock's clause; `orders.lock` (tests only) removes it to show what the prior-status guard stops. */
const LOCK = () => (mutant('orders.lock') ? '' : 'FOR UPDATE');

/** SELECT … FOR UPDATE: callbacks, query results and cancels on one order run one after another. */
export async function lockOrder(tx: Tx, orderId: string): Promise<Order | undefined> {
  const result = await tx.query<OrderRow>(`SELECT * FROM orders WHERE order_id = $1 ${LOCK()}`, [orderId]);
  return result.rows[0] ? toOrder(result.rows[0]) : undefined;
}

/** Many orders locked at once, in id order (two callers locking overlapping sets never wait in a cycle). */
export async function lockOrders(tx: Tx, orderIds: readonly string[]): Promise<Map<string, Order>> {
  const result = await tx.query<OrderRow>(
    `SELECT * FROM orders WHERE order_id = ANY($1::text[]) ORDER BY order_id ${LOCK()}`,
    [orderIds],
  );
  return new Map(result.rows.map((row) => [row.order_id, toOrder(row)]));
}

export async function setReservation(tx: Tx, orderId: string, key: string, attempt: number): Promise<void> {
  await tx.query('UPDATE orders SET reservation_key = $2, reserve_attempt = $3 WHERE order_id = $1', [
    orderId,
    key,
    attempt,
  ]);
}

export interface TransitionResult {
  ok: boolean;
  version?: number;
}

export interface TransitionRequest {
  orderId: string;
  from: OrderStatus;
  to: OrderStatus;
  reason: string;
  /** Issue 48: the provider the payment goes to (set by CREATED → PAYING), the provider's payment id once learnt. */
  payment?: PaymentRef;
}

export interface PaymentRef {
  provider?: string;
  paymentId?: string;
}

/**
 * An event's `lines`: every line of the order as the snapshot taken at create, in line order (the
 * order's row names only line 1). An order without line rows (placed before they existed) is its
 * one line. Probes order_lines by its primary key (order_id, line_no).
 */
const EVENT_LINES_SQL = `SELECT COALESCE(
   (SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'name', l.name, 'quantity', l.quantity, 'unit_price', l.unit_price)
                     ORDER BY l.line_no)
      FROM order_lines l WHERE l.order_id = u.order_id),
   jsonb_build_array(jsonb_build_object('sku', u.sku, 'name', u.sku, 'quantity', u.quantity, 'unit_price', u.amount / u.quantity))
 ) AS lines`;

/**
 * The one way an order changes state: a guarded UPDATE on the expected prior state, version + 1,
 * a transition-log row, and for PAID/FAILED/CANCELLED/REFUNDED an outbox event carrying every
 * line (`lines`; a one-line order's event keeps the old `sku` and `quantity` too) — all in the
 * caller's transaction, one statement for any number of orders. An order whose precondition
 * failed is absent from the answer: refused, not overwritten. Answers order id → new version.
 */
export async function transitionMany(
  tx: Tx,
  requests: readonly TransitionRequest[],
  now: Date,
): Promise<Map<string, number>> {
  for (const r of requests)
    invariant(isAllowed(r.from, r.to), `transition ${r.from} -> ${r.to} is not in the state machine`);
  if (requests.length === 0) return new Map();
  const result = await tx.query<{ order_id: string; version: number }>(
    `WITH t AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $7::text[], $8::text[])
                AS t(order_id, from_status, to_status, reason, provider, payment_id)),
     u AS (UPDATE orders o SET status = t.to_status, version = o.version + 1, updated_at = $5,
                  -- Issue 48: the pay's own transition records where its money goes; the first
                  -- payment id learnt stays (orders_provider_payment: one payment, one order).
                  payment_provider = coalesce(t.provider, o.payment_provider),
                  provider_payment_id = coalesce(o.provider_payment_id, t.payment_id)
           FROM t WHERE o.order_id = t.order_id ${mutant('orders.transition.prior-status') ? '' : 'AND o.status = t.from_status'}
           RETURNING o.*, t.from_status, t.reason),
     logged AS (INSERT INTO order_transitions (order_id, from_status, to_status, version, reason, at)
                SELECT order_id, from_status, status, version, reason, $5 FROM u),
     evented AS (INSERT INTO outbox (order_id, event_type, order_version, payload, created_at, next_attempt_at)
                 SELECT u.order_id, 'ORDER_' || u.status, u.version,
                        jsonb_build_object('order_id', u.order_id, 'tenant_id', u.tenant_id, 'user_id', u.user_id,
                                           'amount', u.amount, 'status', u.status, 'version', u.version, 'lines', ls.lines)
                        || CASE WHEN jsonb_array_length(ls.lines) = 1
                                THEN jsonb_build_object('sku', u.sku, 'quantity', u.quantity) ELSE '{}'::jsonb END,
                        $5, $5
                 FROM u CROSS JOIN LATERAL (${EVENT_LINES_SQL}) ls
                 WHERE u.status = ANY($6::text[]) ORDER BY u.order_id)
     SELECT order_id, version FROM u`,
    [
      requests.map((r) => r.orderId),
      requests.map((r) => r.from),
      requests.map((r) => r.to),
      requests.map((r) => r.reason),
      now,
      [...EVENT_STATUSES],
      requests.map((r) => r.payment?.provider ?? null),
      requests.map((r) => r.payment?.paymentId ?? null),
    ],
  );
  return new Map(result.rows.map((r) => [r.order_id, r.version]));
}

/** One order's guarded transition (transitionMany for one). */
export async function transition(
  tx: Tx,
  orderId: string,
  from: OrderStatus,
  to: OrderStatus,
  reason: string,
  now: Date,
  payment?: PaymentRef,
): Promise<TransitionResult> {
  const version = (await transitionMany(tx, [{ orderId, from, to, reason, ...(payment ? { payment } : {}) }], now)).get(
    orderId,
  );
  return version === undefined ? { ok: false } : { ok: true, version };
}

export async function getTimeline(db: Executor, orderId: string): Promise<TimelineEntry[]> {
  const result = await db.query<{
    from_status: OrderStatus | null;
    to_status: OrderStatus;
    version: number;
    reason: string;
    at: Date;
  }>('SELECT from_status, to_status, version, reason, at FROM order_transitions WHERE order_id = $1 ORDER BY version', [
    orderId,
  ]);
  return result.rows.map((r) => ({
    from: r.from_status,
    to: r.to_status,
    version: r.version,
    reason: r.reason,
    at: r.at.toISOString(),
  }));
}

/** A note on the order that a person must look at; never changes its status. */
export async function noteAttention(tx: Tx, orderId: string, note: string): Promise<void> {
  await tx.query(`UPDATE orders SET attention = $2 WHERE order_id = $1`, [orderId, note.slice(0, 500)]);
}

/** What an operator sees besides the status: the note for a person and recovery's count of misses. */
export async function findOrderNotes(
  db: Executor,
  orderId: string,
): Promise<{ attention: string | null; recoveryAttempts: number }> {
  const result = await db.query<{ attention: string | null; recovery_attempts: number }>(
    'SELECT attention, recovery_attempts FROM orders WHERE order_id = $1',
    [orderId],
  );
  return { attention: result.rows[0]?.attention ?? null, recoveryAttempts: result.rows[0]?.recovery_attempts ?? 0 };
}

/** Order counts by status for one SKU, and the ids behind it (for per-SKU reports). */
// The orders that hold a SKU on any line: line 1 is on the order row (orders placed before lines
// existed have only that), lines 2..20 in order_lines (index order_lines_tenant_sku, migration 151).
const ORDERS_OF_SKU_SQL = `SELECT order_id FROM orders WHERE tenant_id = $1 AND sku = $2
   UNION SELECT order_id FROM order_lines WHERE tenant_id = $1 AND sku = $2`;

/** Order counts by status for one SKU, every order that holds it on any line counted once. */
export async function statusCountsForSku(db: Executor, tenantId: string, sku: string): Promise<Record<string, number>> {
  const result = await db.query<{ status: string; n: number }>(
    `SELECT o.status, count(*)::int AS n FROM orders o WHERE o.order_id IN (${ORDERS_OF_SKU_SQL})
     GROUP BY o.status ORDER BY o.status`,
    [tenantId, sku],
  );
  return Object.fromEntries(result.rows.map((r) => [r.status, r.n]));
}

/** The ids of the orders that hold a SKU on any line. */
export async function orderIdsForSku(db: Executor, tenantId: string, sku: string): Promise<string[]> {
  const result = await db.query<{ order_id: string }>(ORDERS_OF_SKU_SQL, [tenantId, sku]);
  return result.rows.map((r) => r.order_id);
}
