// Drivers for the crash-point matrix (tests/faults/crash-matrix.test.ts): for each named fault
// point, the traffic that reaches it in a real `flashpay start` process, and the final state the
// orders must reach once a restarted process has converged. Everything goes through the public
// API and the provider double's control API, as an operator's client would.
import type { FaultPointName } from '../../src/platform/faultpoints.ts';
import { everyOf } from './every.ts';

export interface CrashTarget {
  api: string;
  channel: string;
  token(user: string, scope?: 'buyer' | 'admin' | 'operator'): Promise<string>;
  sql<T extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}

export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export async function request(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** What a scenario left for the check: the orders it made and a request whose answer died with the process. */
export interface Driven {
  orders: string[];
  users: Record<string, string>;
  /** The request in flight when the process was killed: resolves with its status or 'no answer'. */
  lost?: Promise<number | 'no answer'>;
  /** What a scenario needs again after the restart (e.g. the keys to resend). */
  retry?: { sku: string; buyers: { user: string; key: string }[] };
}

export interface CrashScenario {
  /** The traffic that reaches the point; the point itself parks it (STAGE <name>). */
  drive(t: CrashTarget): Promise<Driven>;
  /** The final state of the scenario's orders, once converged after the restart (polled until true). */
  settled(t: CrashTarget, d: Driven): Promise<boolean>;
  /** Further checks after convergence (each event once, each call once …). */
  check(t: CrashTarget, d: Driven): Promise<string[]>;
  /** Extra environment of the doomed process only (the restarted one runs without it). */
  env?: Record<string, string>;
}

let seq = 0;
const key = (p: string) => `${p}-${process.pid}-${++seq}`;

async function sku(
  t: CrashTarget,
  name: string,
  stock: number,
  price = 500,
  extra: { per_user_limit?: number } = {},
): Promise<void> {
  const made = await request(t.api, 'POST', '/v1/admin/skus', {
    token: await t.token('ops', 'admin'),
    body: { sku: name, name: `SKU ${name}`, price, stock, ...extra },
  });
  if (made.status !== 201) throw new Error(`sku ${name}: ${made.status} ${JSON.stringify(made.body)}`);
}

async function createOrder(t: CrashTarget, user: string, skuName: string): Promise<string> {
  const made = await request(t.api, 'POST', '/v1/orders', {
    token: await t.token(user),
    body: { sku: skuName },
    headers: { 'idempotency-key': key('c') },
  });
  if (made.status !== 201) throw new Error(`create: ${made.status} ${JSON.stringify(made.body)}`);
  return made.body.order_id as string;
}

function pay(t: CrashTarget, user: string, orderId: string, body?: unknown, k = key('p')) {
  return t
    .token(user)
    .then((token) =>
      request(t.api, 'POST', `/v1/orders/${orderId}/pay`, { token, body, headers: { 'idempotency-key': k } }),
    );
}

const noAnswer = (p: Promise<Reply>) =>
  p.then(
    (r) => r.status,
    () => 'no answer' as const,
  );

const statusOf = async (t: CrashTarget, ids: string[]) =>
  (await t.sql<{ status: string }>('SELECT status FROM orders WHERE order_id = ANY($1) ORDER BY order_id', [ids])).map(
    (r) => r.status,
  );

const control = (t: CrashTarget, path: string, body: unknown) =>
  request(t.channel, 'POST', path, { body }).then((r) => {
    if (r.status >= 400) throw new Error(`channel ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r;
  });

async function one(t: CrashTarget, sqlText: string, params: unknown[]): Promise<number> {
  return Number((await t.sql<{ n: number }>(sqlText, params))[0]?.n ?? 0);
}

/** A card pay that the point interrupts; PAID once recovery has asked the provider. */
const cardPay: CrashScenario = {
  async drive(t) {
    const name = key('card');
    await sku(t, name, 3);
    const orderId = await createOrder(t, 'card-buyer', name);
    // The provider's notification is held: the charge is found by recovery's query, not by a callback.
    await control(t, '/_control/callbacks', { mode: 'HOLD' });
    return { orders: [orderId], users: { [orderId]: 'card-buyer' }, lost: noAnswer(pay(t, 'card-buyer', orderId)) };
  },
  settled: async (t, d) => everyOf(await statusOf(t, d.orders), (s) => s === 'PAID'),
  async check(t, d) {
    const id = d.orders[0];
    const wrong: string[] = [];
    const paid = await t.sql<{ reason: string }>(
      `SELECT reason FROM order_transitions WHERE order_id = $1 AND to_status = 'PAID'`,
      [id],
    );
    // Entered once, and by recovery's query: the held notification never told anybody.
    if (paid.length !== 1 || paid[0]?.reason !== 'query') wrong.push(`${id}: PAID entered ${JSON.stringify(paid)}`);
    return wrong;
  },
};

/** The relay delivered ORDER_PAID and died before marking it: delivered again, applied once. */
const relayDelivery: CrashScenario = {
  drive: (t) => cardPayPaid(t, 'relay'),
  settled: async (t, d) =>
    (await one(t, 'SELECT count(*)::int AS n FROM outbox WHERE order_id = ANY($1) AND published_at IS NULL', [
      d.orders,
    ])) === 0 && everyOf(await statusOf(t, d.orders), (s) => s === 'PAID'),
  async check(t, d) {
    const id = d.orders[0];
    const wrong: string[] = [];
    const applied = await one(
      t,
      `SELECT count(*)::int AS n FROM ful_received WHERE order_id = $1 AND event_type = 'ORDER_PAID' AND effect = 'APPLIED'`,
      [id],
    );
    const arrivals = await one(
      t,
      `SELECT count(*)::int AS n FROM ful_received WHERE order_id = $1 AND effect <> 'ERROR'`,
      [id],
    );
    if (applied !== 1) wrong.push(`${id}: ORDER_PAID applied ${applied} times`);
    if (arrivals < 2) wrong.push(`${id}: expected the redelivery the crash forces, saw ${arrivals} arrival(s)`);
    return wrong;
  },
};

async function cardPayPaid(
  t: CrashTarget,
  prefix: string,
  beforePay?: (orderId: string) => Promise<unknown>,
): Promise<Driven> {
  const name = key(prefix);
  await sku(t, name, 3);
  const user = `${prefix}-buyer`;
  const orderId = await createOrder(t, user, name);
  await beforePay?.(orderId);
  const paid = await pay(t, user, orderId);
  if (paid.body?.status !== 'PAID') throw new Error(`pay: ${paid.status} ${JSON.stringify(paid.body)}`);
  return { orders: [orderId], users: { [orderId]: user } };
}

/** A wallet pay committed (debit, PAID, key) and killed before its answer: the retry replays PAID, one debit. */
const walletPay: CrashScenario = {
  async drive(t) {
    const name = key('wal');
    await sku(t, name, 3, 400);
    const credited = await request(t.api, 'POST', '/v1/admin/wallets/wal-buyer/credits', {
      token: await t.token('ops', 'admin'),
      body: { amount: 1_000, reason: 'test top-up' },
      headers: { 'idempotency-key': key('credit') },
    });
    if (credited.status !== 201) throw new Error(`credit: ${credited.status}`);
    const orderId = await createOrder(t, 'wal-buyer', name);
    return {
      orders: [orderId],
      users: { [orderId]: 'wal-buyer' },
      lost: noAnswer(pay(t, 'wal-buyer', orderId, { method: 'wallet' }, `wallet-${orderId}`)),
    };
  },
  settled: async (t, d) => everyOf(await statusOf(t, d.orders), (s) => s === 'PAID'),
  async check(t, d) {
    const id = d.orders[0] as string;
    const wrong: string[] = [];
    const retry = await pay(t, 'wal-buyer', id, { method: 'wallet' }, `wallet-${id}`);
    if (retry.status !== 200 || retry.body?.status !== 'PAID')
      wrong.push(`${id}: retry answered ${JSON.stringify(retry.body)}`);
    const debits = await one(
      t,
      `SELECT count(*)::int AS n FROM wallet_transfers WHERE order_id = $1 AND kind = 'DEBIT'`,
      [id],
    );
    if (debits !== 1) wrong.push(`${id}: ${debits} debits`);
    const wallet = await request(t.api, 'GET', '/v1/wallet', { token: await t.token('wal-buyer') });
    if (wallet.body?.balance !== 600) wrong.push(`wallet balance ${JSON.stringify(wallet.body)}`);
    return wrong;
  },
};

/** A PAID order whose fulfilment is refused: the saga compensates (refund, then release) across the kill. */
const compensation: CrashScenario = {
  async drive(t) {
    // Refused before the pay: the saga loop may pick the order up the moment it is PAID.
    return cardPayPaid(t, 'saga', (id) =>
      control(t, '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: id }),
    );
  },
  settled: async (t, d) => everyOf(await statusOf(t, d.orders), (s) => s === 'COMPENSATED'),
  async check(t, d) {
    const id = d.orders[0] as string;
    const wrong: string[] = [];
    const reservation = await t.sql<{ status: string }>(
      'SELECT r.status FROM reservations r JOIN orders o ON o.tenant_id = r.tenant_id AND o.reservation_key = r.request_key WHERE o.order_id = $1',
      [id],
    );
    if (reservation[0]?.status !== 'RELEASED') wrong.push(`${id}: reservation ${reservation[0]?.status}`);
    const requests = (await request(t.channel, 'GET', '/_control/requests')).body as Record<
      string,
      { by_order: Record<string, number> }
    >;
    // The restarted channel counts from zero: a second fulfil or refund call after the kill shows here.
    if ((requests.fulfil?.by_order[id] ?? 0) > 0) wrong.push(`${id}: fulfil called again after the restart`);
    if ((requests.refund?.by_order[id] ?? 0) > 1) wrong.push(`${id}: refund called twice after the restart`);
    return wrong;
  },
};

/** Queued orders: the stock service's batch dies before its commit; after the restart each request applies once. */
const stockBatch: CrashScenario = {
  async drive(t) {
    const name = key('q');
    await sku(t, name, 2);
    const orders: string[] = [];
    const users: Record<string, string> = {};
    for (let i = 0; i < 4; i++) {
      const placed = await request(t.api, 'POST', '/v1/orders', {
        token: await t.token(`q-${i}`),
        body: { sku: name },
        headers: { 'idempotency-key': key('q'), prefer: 'respond-async' },
      });
      if (placed.status !== 202) throw new Error(`queued create: ${placed.status} ${JSON.stringify(placed.body)}`);
      orders.push(placed.body.order_id as string);
      users[placed.body.order_id as string] = `q-${i}`;
    }
    return { orders, users };
  },
  settled: async (t, d) => everyOf(await statusOf(t, d.orders), (s) => s === 'CREATED' || s === 'REJECTED'),
  async check(t, d) {
    const wrong: string[] = [];
    const statuses = (await statusOf(t, d.orders)).sort().join(',');
    if (statuses !== 'CREATED,CREATED,REJECTED,REJECTED') wrong.push(`queued orders ended ${statuses}`);
    const applied = await one(
      t,
      `SELECT count(*)::int AS n FROM stock_results_in WHERE order_id = ANY($1) AND effect = 'APPLIED'`,
      [d.orders],
    );
    if (applied !== d.orders.length) wrong.push(`${applied} stock results applied for ${d.orders.length} orders`);
    const unapplied = await one(
      t,
      'SELECT count(*)::int AS n FROM stock_inbox WHERE order_id = ANY($1) AND applied_at IS NULL',
      [d.orders],
    );
    if (unapplied !== 0) wrong.push(`${unapplied} stock requests never applied`);
    return wrong;
  },
};

/** Sync creates grouped into one batch that dies before its COMMIT: nothing of it stays; the same keys then buy afresh. */
const createBatch: CrashScenario = {
  // Buyers queued behind the parked batch wait on the SKU's row lock; under a loaded suite the
  // kill can come seconds after STAGE, and none of them may be answered 503 before it.
  env: { FLASHPAY_IDEMPOTENCY_WAIT_MS: '60000' },
  async drive(t) {
    const name = key('b');
    // A per-user limit keeps every batch of the SKU on the transactional path, the one with a
    // moment between its writes and its COMMIT (the one-statement form has none to crash in).
    await sku(t, name, 3, 500, { per_user_limit: 2 });
    const buyers = Array.from({ length: 5 }, (_, i) => ({ user: `b-${i}`, key: key('b') }));
    const answers = buyers.map((b) =>
      t
        .token(b.user)
        .then((token) =>
          request(t.api, 'POST', '/v1/orders', { token, body: { sku: name }, headers: { 'idempotency-key': b.key } }),
        ),
    );
    // Every buyer is in the parked batch or queued behind it: nobody hears back from the doomed process.
    const lost = Promise.all(answers.map(noAnswer)).then((all) =>
      all.every((a) => a === 'no answer') ? ('no answer' as const) : 200,
    );
    return { orders: [], users: {}, lost, retry: { sku: name, buyers } };
  },
  async settled(t, d) {
    const { sku: name, buyers } = d.retry!;
    const answers = await Promise.all(
      buyers.map(async (b) =>
        request(t.api, 'POST', '/v1/orders', {
          token: await t.token(b.user),
          body: { sku: name },
          headers: { 'idempotency-key': b.key },
        }),
      ),
    );
    const ids = answers.filter((a) => a.status === 201).map((a) => a.body.order_id as string);
    d.orders.splice(0, d.orders.length, ...ids);
    return everyOf(answers, (a) => a.status === 201 || a.body?.code === 'SOLD_OUT');
  },
  async check(t, d) {
    const wrong: string[] = [];
    if (d.orders.length !== 3) wrong.push(`${d.orders.length} orders for 3 units after the retries`);
    const all = await one(t, 'SELECT count(*)::int AS n FROM orders WHERE sku = $1', [d.retry!.sku]);
    if (all !== 3) wrong.push(`${all} orders of the SKU in the database (a half batch survived?)`);
    // One reservation per order (HELD, or RELEASED once its hold expired): none from the dead batch.
    const reserved = await one(t, 'SELECT count(*)::int AS n FROM reservations WHERE sku = $1', [d.retry!.sku]);
    if (reserved !== 3) wrong.push(`${reserved} reservations for 3 orders`);
    return wrong;
  },
};

/** A pay whose answer was lost (UNKNOWN); recovery dies right after claiming it; the restarted one converges it, PAID once. */
const recoveryClaim: CrashScenario = {
  async drive(t) {
    const name = key('rc');
    await sku(t, name, 3);
    const orderId = await createOrder(t, 'rc-buyer', name);
    await control(t, '/_control/callbacks', { mode: 'HOLD' });
    // The charge happens, its answer arrives after the pay timeout: the pay says UNKNOWN, recovery takes it up.
    await control(t, '/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', merchant_order: orderId, ms: 3_000 });
    const paid = await pay(t, 'rc-buyer', orderId);
    if (paid.body?.status !== 'UNKNOWN') throw new Error(`pay: ${paid.status} ${JSON.stringify(paid.body)}`);
    return { orders: [orderId], users: { [orderId]: 'rc-buyer' } };
  },
  settled: async (t, d) => everyOf(await statusOf(t, d.orders), (s) => s === 'PAID'),
  check: (t, d) => cardPay.check(t, d),
};

/** Every fault point and the scenario that reaches it: a new point without one fails the matrix. */
export const CRASH_SCENARIOS: Readonly<Record<FaultPointName, CrashScenario>> = {
  'charged.before-commit': cardPay,
  'pay.after-charge': cardPay,
  'relay.after-deliver-before-mark': relayDelivery,
  'wallet-pay.after-commit': walletPay,
  'saga.after-fulfil-call': compensation,
  'saga.after-refund-call': compensation,
  'saga.between-undos': compensation,
  'stock.batch.before-commit': stockBatch,
  'create.batch.before-commit': createBatch,
  'recovery.after-claim': recoveryClaim,
};
