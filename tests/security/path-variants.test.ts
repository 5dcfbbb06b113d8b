import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChannel, type RunningChannel } from '../../src/channel/index.ts';
import { routesOf, type RouteEntry } from '../../src/platform/http.ts';
import { createSku, placeOrder, TENANT } from '../support/fixtures.ts';
import { waitFor } from '../support/poll.ts';
import { startStack, TEST_NOTIFY_SECRET, type Stack } from '../support/stack.ts';
import { concretePath, inBatches, pathVariants, sendRaw, type RawReply } from './path-variants.ts';

// Issue 40 (PV-01, PV-02): access is decided on the route the router matched, never on the raw URL.
// Every protected route — read from the routers themselves, so a route added later is covered — is
// sent without credentials under ~45 spellings of its path (docs/security.md, "One path, one
// decision"); each must be refused by its own guard or not routed at all, and nothing may move:
// no order state, no ledger line, no wallet transfer, no scripted fault or callback setting.
const CONTROL_TOKEN = 'path-variants-control-token-0123456789abcdef';

// Routes that take no bearer token on purpose (docs/security.md, "Who can call what"). A route
// missing here is treated as protected: its plain path without a token must answer 401.
// The console's deep links (issue 36) are the /ops page itself: static HTML, its data behind a token.
const PUBLIC = new Set([
  '/healthz',
  '/readyz',
  '/',
  '/ops',
  '/ops/orders/:id',
  '/ops/skus',
  '/ops/skus/:sku',
  '/v1/dev/token',
]);
const isPublic = (url: string) => PUBLIC.has(url) || url.startsWith('/docs') || url.startsWith('/web/');
// Routes whose credential is a signature over the body, checked before anything else.
const SIGNED = new Set([
  '/v1/payment-notifications',
  '/v1/fulfillment/events',
  '/v1/fulfillment/events/batch',
  // Issue 37: a real provider's notification route, signed its way (tests/providers: ST-04, AP-04).
  '/v1/providers/stripe/webhook',
  '/v1/providers/alipay/notify',
]);

// Automatic HEAD routes are copies of their GET (the same hooks) and are not in the OpenAPI
// document the suite holds every answer to, so the GET stands for both.
const probed = (routes: readonly RouteEntry[], protectedUrl: (url: string) => boolean) =>
  routes.filter((r) => r.method !== 'HEAD' && protectedUrl(r.url));

/** What an attacker would send to each route if its guard let it through. */
function harmfulBody(method: string, url: string, victim: string, api: string): string | undefined {
  const bodies: Record<string, unknown> = {
    'POST /_control/callbacks/send': {
      merchant_order: victim,
      kind: 'CHARGED',
      amount: 1990,
      notify_url: `${api}/v1/payment-notifications`,
    },
    'POST /_control/faults': { op: 'charge', kind: 'DECLINE', times: 5 },
    'POST /_control/callbacks': { mode: 'HOLD' },
    'POST /_control/settings': { notify_max_attempts: 1 },
    'POST /_control/accounts': { customer: `${TENANT}/alice`, balance: 1 },
    'POST /_control/callbacks/release': { ids: [] },
    'POST /v1/admin/wallets/:user/credits': { amount: 5000, reason: 'test top-up' },
    'POST /v1/admin/skus': { sku: 'evil', name: 'Evil', price: 1, stock: 1 },
    'PATCH /v1/admin/skus/:sku': { add_stock: 5 },
    'POST /v1/orders': { sku: 'tee' },
    'POST /v1/admin/reservations/expire': { order_id: victim },
  };
  const body = bodies[`${method} ${url}`];
  if (body !== undefined) return JSON.stringify(body);
  return method === 'GET' ? undefined : '{}';
}

/** Refused by the route's own guard, or never routed: anything else reached a handler. */
function verdict(reply: RawReply, signed: boolean): string {
  const { status, body } = reply;
  if (status === 401 && body?.code === 'UNAUTHENTICATED') return 'guarded';
  if (signed && status === 400 && body?.code === 'BAD_SIGNATURE') return 'guarded';
  // A provider no tenant pays through: its route refuses everything before reading the body.
  if (signed && status === 404 && body?.code === 'PROVIDER_NOT_CONFIGURED') return 'guarded';
  if (status === 404 && String(body?.detail).startsWith('no route for')) return 'unrouted';
  // Refused by the edge before any handler: bad percent-encoding, or a control character (`%00`).
  const detail = String(body?.detail);
  if (status === 400 && /percent-encoded|cannot be routed|contains the control character/.test(detail))
    return 'unrouted';
  return `REACHED ${status} ${JSON.stringify(body).slice(0, 160)}`;
}

describe('one path, one decision (issue 40)', () => {
  let channel: RunningChannel;
  let s: Stack;
  let victim = '';
  let paid = '';
  const controlHeaders = { authorization: `Bearer ${CONTROL_TOKEN}` };

  /** Everything an unauthenticated request must not move, in the database and in the double. */
  async function snapshot(): Promise<string> {
    const q = async (sql: string) => (await s.db.pool.query(sql)).rows;
    const control = async (path: string) => (await sendRaw(channel.url, 'GET', path, controlHeaders)).body;
    return JSON.stringify({
      orders: await q('SELECT order_id, status, version FROM orders ORDER BY order_id'),
      reservations: await q('SELECT request_key, status FROM reservations ORDER BY 1'),
      skus: await q('SELECT sku, total, available, held, confirmed FROM sku_counters ORDER BY sku'),
      keys: await q('SELECT count(*)::int AS n FROM idempotency_keys'),
      notifications: await q('SELECT count(*)::int AS n FROM payment_notifications'),
      outbox: await q('SELECT count(*)::int AS n FROM outbox'),
      wallet: await q('SELECT transfer_id, amount FROM wallet_transfers ORDER BY 1'),
      ledger: (await sendRaw(channel.url, 'GET', '/statement', {})).body,
      sent: await control('/_control/notifications'),
      faults: await control('/_control/faults'),
      callbacks: await control('/_control/callbacks'),
      settings: await control('/_control/settings'),
      account: await control(`/_control/accounts/${TENANT}/alice`),
    });
  }

  beforeAll(async () => {
    channel = await startChannel({
      notifySecret: TEST_NOTIFY_SECRET,
      control: true,
      controlToken: CONTROL_TOKEN,
      notifyRetryBaseMs: 20,
      notifyMaxAttempts: 2,
    });
    s = await startStack({ channelUrl: channel.url, config: { rateLimitPerMinute: 0, failedAuthPerMinute: 0 } });
    await createSku(s, { sku: 'tee', stock: 5 });
    const alice = await s.token(TENANT, 'alice');
    victim = (await placeOrder(s, alice, 'pv-victim', { sku: 'tee' })).body.order_id;
    paid = (await placeOrder(s, alice, 'pv-paid', { sku: 'tee' })).body.order_id;
    const pay = await s.call('POST', `/v1/orders/${paid}/pay`, {
      token: alice,
      headers: { 'idempotency-key': 'pv-pay' },
    });
    expect(pay.body.status).toBe('PAID');
    // The provider's own notification of that charge lands on its own time: before any snapshot.
    await waitFor(
      async () => (await s.db.pool.query('SELECT 1 FROM payment_notifications')).rowCount === 1,
      'the paid order’s notification',
    );
  }, 60_000);
  afterAll(async () => {
    await s?.close();
    await channel?.close();
  });

  /** Sends every variant of every route; returns the ones that reached a handler. */
  async function sweep(origin: string, routes: readonly RouteEntry[], api: string): Promise<string[]> {
    const reached: string[] = [];
    const params = { id: victim, order_id: paid, sku: 'tee', user: 'alice', merchant_order: paid };
    const sends = routes.flatMap((route) =>
      pathVariants(concretePath(route.url, params, victim), origin).map((target) => ({ route, target })),
    );
    await inBatches(sends, 16, async ({ route, target }) => {
      const body = harmfulBody(route.method, route.url, victim, api);
      const reply = await sendRaw(origin, route.method, target, { 'idempotency-key': `pv-${target}` }, body);
      const v = verdict(reply, SIGNED.has(route.url));
      if (v.startsWith('REACHED')) reached.push(`${route.method} ${target} (${route.url}): ${v}`);
    });
    expect(sends.length).toBeGreaterThan(routes.length * 30);
    return reached;
  }

  it('PV-01: no spelling of a /_control path reaches the double’s control API without its token', async () => {
    const control = probed(channel.routes, (url) => url.startsWith('/_control'));
    // From the router: the whole control API, whatever is added to it later.
    expect(control.map((r) => `${r.method} ${r.url}`)).toEqual(
      expect.arrayContaining(['POST /_control/callbacks/send', 'POST /_control/reset', 'POST /_control/faults']),
    );
    // With its token the control API answers (so the snapshot below reads real state, not 401s).
    expect((await sendRaw(channel.url, 'GET', '/_control/settings', controlHeaders)).status).toBe(200);
    const before = await snapshot();
    const reached = await sweep(channel.url, control, s.url);
    expect(reached).toEqual([]);
    // The business outcome: the unpaid order was not paid by a forged notification, the ledger
    // (the paid order's charge) was not wiped, and nothing was scripted.
    expect(await snapshot()).toBe(before);
    const order = await s.db.pool.query('SELECT status FROM orders WHERE order_id = $1', [victim]);
    expect(order.rows[0]?.status).toBe('CREATED');
  }, 120_000);

  it('PV-02: no spelling of an API path reaches a handler without its token or signature', async () => {
    const routes = probed(routesOf(s.app), (url) => !isPublic(url));
    expect(routes.length).toBeGreaterThan(30);
    const before = await snapshot();
    const reached = await sweep(s.url, routes, s.url);
    expect(reached).toEqual([]);
    expect(await snapshot()).toBe(before);
  }, 120_000);
});
