import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChannel, type RunningChannel } from '../../src/channel/index.ts';
import { paymentIntentId, stripeEvent, stripeSignature } from '../../src/channel/dialects/stripe.ts';
import { purgeCompletedKeys } from '../../src/idempotency/index.ts';
import type { Config } from '../../src/platform/config.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { DEFAULT_STATUS_SYNC, providersBanner, type ProviderName } from '../../src/platform/provider.config.ts';
import { statusSyncOf } from '../../src/payments/index.ts';
import { armMutation } from '../../src/platform/mutations.ts';
import { signPayload } from '../../src/platform/signature.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { createSku, placeOrder } from '../support/fixtures.ts';
import { eventually, startPaymentStack } from '../support/payments.ts';
import { providerHarness, type ProviderHarness } from '../support/providers/index.ts';
import { alipayNotifyForm } from '../support/providers/alipay.ts';
import { TEST_STRIPE_WEBHOOK_SECRET } from '../support/providers/stripe.ts';
import { countRows, startStack, TEST_NOTIFY_SECRET, type HttpResult, type Stack } from '../support/stack.ts';

// Issue 48, "money follows its provider": one stack whose tenants pay through different providers
// (acme → Stripe, globex → Alipay, initech → the fake channel), each against its own double over real
// HTTP, every notification signed as that provider signs it, a real PostgreSQL. A provider's
// notification settles only orders whose payment is at that provider, in its currency, under a
// payment id no other order holds; anything else leaves the order as it was, with a note.

const DAY_MS = 24 * 3600_000;
const ACME = 'acme';
const GLOBEX = 'globex';
const INITECH = 'initech';

interface Doubles {
  fake: RunningChannel;
  stripe: RunningChannel;
  alipay: RunningChannel;
  harness: Record<'stripe' | 'alipay', ProviderHarness>;
}

async function startDoubles(): Promise<Doubles> {
  const stripe = await providerHarness('stripe');
  const alipay = await providerHarness('alipay');
  const channel = (dialect?: ProviderHarness['dialect']) =>
    startChannel({
      notifySecret: TEST_NOTIFY_SECRET,
      control: true,
      notifyRetryBaseMs: 20,
      notifyMaxAttempts: 5,
      ...(dialect ? { dialect, bodyLimitBytes: 64 * 1024 } : {}),
    });
  return {
    fake: await channel(),
    stripe: await channel(stripe.dialect),
    alipay: await channel(alipay.dialect),
    harness: { stripe, alipay },
  };
}

/** Every provider configured at once; `tenants` says who pays where (FLASHPAY_PROVIDER_TENANTS). */
function mixedConfig(
  d: Doubles,
  tenants: Record<string, ProviderName>,
  provider: ProviderName = 'fake',
): Partial<Config> {
  const stripe = d.harness.stripe.config(d.stripe.url).providers!;
  const alipay = d.harness.alipay.config(d.alipay.url).providers!;
  return {
    providers: { ...loadConfig({}).providers, provider, tenants, stripe: stripe.stripe, alipay: alipay.alipay },
  };
}

async function control(channel: RunningChannel, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${channel.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 400) throw new Error(`channel ${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

type Line = { type: string; merchant_order: string; amount: number; ref: string };
const statementOf = async (channel: RunningChannel, own: boolean) =>
  ((await control(channel, 'GET', own ? '/statement' : '/_control/statement')) as { lines: Line[] }).lines;

/** The Stripe Event for a notification, in `currency`, signed with the endpoint's secret. */
function stripeWebhook(
  s: Stack,
  body: { notify_id: string; merchant_order: string; kind: 'CHARGED' | 'DECLINED' | 'REFUNDED'; amount: number },
  options: { currency?: string; intentOf?: string } = {},
): Promise<HttpResult> {
  const event = stripeEvent(
    { notifyId: body.notify_id, merchantOrder: body.merchant_order, kind: body.kind, amount: body.amount, txn: '' },
    options.currency ?? 'usd',
    TEST_STRIPE_WEBHOOK_SECRET,
  ) as { data: { object: Record<string, unknown> } };
  // A PaymentIntent id of another order (a replayed or crossed event): the order is still metadata's.
  if (options.intentOf) event.data.object.id = paymentIntentId(options.intentOf);
  const raw = JSON.stringify(event);
  return s.call('POST', '/v1/providers/stripe/webhook', {
    rawBody: raw,
    headers: { 'stripe-signature': stripeSignature(TEST_STRIPE_WEBHOOK_SECRET, raw) },
  });
}

function alipayNotify(s: Stack, body: Record<string, unknown>): Promise<HttpResult> {
  return s.call('POST', '/v1/providers/alipay/notify', {
    rawBody: alipayNotifyForm(body),
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
  });
}

function fakeNotify(s: Stack, body: Record<string, unknown>): Promise<HttpResult> {
  const raw = JSON.stringify(body);
  return s.call('POST', '/v1/payment-notifications', {
    rawBody: raw,
    headers: { 'flashpay-signature': signPayload(TEST_NOTIFY_SECRET, raw, Math.floor(Date.now() / 1000)) },
  });
}

interface AdminOrder {
  status: string;
  version: number;
  attention: string | null;
  payment: { provider: string | null; provider_payment_id: string | null };
  reservation: { status: string };
  notifications: Array<{ notify_id: string; provider: string | null; effect: string; needs_attention: boolean }>;
  timeline: Array<{ from: string | null; to: string; reason: string }>;
}

function mixedStack(d: Doubles, s: Stack) {
  let keys = 0;
  const admin = (tenant: string) => s.token(tenant, 'ops', 'admin');
  return {
    async buy(tenant: string, user: string, sku: string) {
      const token = await s.token(tenant, user);
      const created = await placeOrder(s, token, `buy-${tenant}-${++keys}`, { sku });
      if (created.status !== 201) throw new Error(`buy: ${created.status} ${created.text}`);
      return { orderId: created.body.order_id as string, token, tenant };
    },
    async pay(o: { orderId: string; token: string }) {
      return s.call('POST', `/v1/orders/${o.orderId}/pay`, {
        token: o.token,
        headers: { 'idempotency-key': `pay-${++keys}` },
      });
    },
    async order(o: { orderId: string; tenant: string }): Promise<AdminOrder> {
      const result = await s.call('GET', `/v1/admin/orders/${o.orderId}`, { token: await admin(o.tenant) });
      if (result.status !== 200) throw new Error(`admin order: ${result.status} ${result.text}`);
      return result.body as AdminOrder;
    },
    async attention(tenant: string) {
      const result = await s.call('GET', '/v1/admin/attention', { token: await admin(tenant) });
      return result.body as { orders: Array<{ order_id: string; attention: string }> };
    },
    async effects(orderId: string) {
      const { rows } = await s.db.pool.query<{ provider: string; effect: string }>(
        'SELECT provider, effect FROM payment_notifications WHERE merchant_order = $1 ORDER BY id',
        [orderId],
      );
      return rows.map((r) => `${r.provider}:${r.effect}`);
    },
    async reconcile(tenant: string) {
      const result = await s.call('GET', '/v1/admin/reconciliation', { token: await admin(tenant) });
      if (result.status !== 200) throw new Error(`reconciliation: ${result.status} ${result.text}`);
      return result.body as { mismatches: Array<{ order_id: string; class: string; detail: string }> };
    },
    admin,
    d,
  };
}

/** What a person and a ledger see of an order: nothing of it may move on a refused notification. */
const still = (o: AdminOrder) => [o.status, o.version, o.reservation.status];

describe('money follows its provider: tenants on Stripe, Alipay and the fake channel in one stack', () => {
  let d: Doubles;
  let db: TestDatabase;
  let s: Stack;
  let m: ReturnType<typeof mixedStack>;
  beforeAll(async () => {
    d = await startDoubles();
    db = await freshDatabase();
    s = await startStack({
      db,
      channelUrl: d.fake.url,
      config: mixedConfig(d, { [ACME]: 'stripe', [GLOBEX]: 'alipay' }),
    });
    // Notifications are sent by the tests, signed: the doubles' own are held (a pay's reply settles it).
    for (const c of [d.fake, d.stripe, d.alipay]) await control(c, 'POST', '/_control/callbacks', { mode: 'HOLD' });
    for (const [tenant, sku] of [
      [ACME, 'mp-a'],
      [GLOBEX, 'mp-g'],
      [INITECH, 'mp-i'],
    ] as const)
      await createSku(s, { sku, stock: 40 }, tenant);
    m = mixedStack(d, s);
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
    for (const c of [d?.fake, d?.stripe, d?.alipay]) await c?.close();
  });

  it('MF-01 a correctly signed Stripe event for an Alipay tenant’s order: 200 WRONG_PROVIDER, the order as it was, a note', async () => {
    // Proves a Stripe notification cannot settle an order whose money is at Alipay.
    const o = await m.buy(GLOBEX, 'g1', 'mp-g');
    const before = await m.order(o);
    const answer = await stripeWebhook(s, {
      notify_id: 'mp01',
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
    });
    expect([answer.status, answer.body]).toEqual([200, { effect: 'WRONG_PROVIDER' }]);
    const after = await m.order(o);
    expect(still(after)).toEqual(still(before));
    expect(after.status).toBe('CREATED');
    expect(after.attention).toMatch(/^WRONG_PROVIDER: a CHARGED notification from stripe \(evt_mp01\) .* alipay/);
    expect(after.notifications.map((n) => [n.provider, n.effect, n.needs_attention])).toEqual([
      ['stripe', 'WRONG_PROVIDER', true],
    ]);
    expect((await m.attention(GLOBEX)).orders.map((n) => n.order_id)).toContain(o.orderId);
    // A retry of the same event is answered from the record; still nothing moves.
    const again = await stripeWebhook(s, {
      notify_id: 'mp01',
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
    });
    expect(again.body).toEqual({ effect: 'DUPLICATE', recorded_effect: 'WRONG_PROVIDER' });
    expect(still(await m.order(o))).toEqual(still(before));
  });

  it('MF-02 an Alipay notify for a Stripe tenant’s order: `success` (Alipay stops), recorded WRONG_PROVIDER, unchanged', async () => {
    // Proves an Alipay notification cannot settle an order whose money is at Stripe.
    const o = await m.buy(ACME, 'a2', 'mp-a');
    const before = await m.order(o);
    const answer = await alipayNotify(s, {
      notify_id: 'mp02',
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
      txn: '2026120722001400000000000002',
    });
    expect([answer.status, answer.text]).toEqual([200, 'success']);
    expect(still(await m.order(o))).toEqual(still(before));
    expect(await m.effects(o.orderId)).toEqual(['alipay:WRONG_PROVIDER']);
    expect((await m.order(o)).attention).toMatch(/^WRONG_PROVIDER: .*from alipay.* stripe/);
  });

  it('MF-03 a fake-channel callback for a Stripe order: WRONG_PROVIDER; a paid Stripe order is not refunded by it either', async () => {
    // Proves the built-in channel's notifications settle only its own tenants' orders, judged
    // against the provider the pay recorded.
    const fresh = await m.buy(ACME, 'a3', 'mp-a');
    const charged = await fakeNotify(s, {
      notify_id: 'mp03-c',
      merchant_order: fresh.orderId,
      kind: 'CHARGED',
      amount: 1990,
    });
    expect(charged.body).toEqual({ effect: 'WRONG_PROVIDER' });
    expect((await m.order(fresh)).status).toBe('CREATED');

    const paid = await m.buy(ACME, 'a3b', 'mp-a');
    expect((await m.pay(paid)).body.status).toBe('PAID');
    const before = await m.order(paid);
    expect(before.payment).toEqual({ provider: 'stripe', provider_payment_id: paymentIntentId(paid.orderId) });
    const refunded = await fakeNotify(s, {
      notify_id: 'mp03-r',
      merchant_order: paid.orderId,
      kind: 'REFUNDED',
      amount: 1990,
    });
    expect(refunded.body).toEqual({ effect: 'WRONG_PROVIDER' });
    expect(still(await m.order(paid))).toEqual(['PAID', before.version, 'CONFIRMED']);
    // Its own tenant's order still settles through the fake channel.
    const own = await m.buy(INITECH, 'i3', 'mp-i');
    const ok = await fakeNotify(s, { notify_id: 'mp03-i', merchant_order: own.orderId, kind: 'CHARGED', amount: 1990 });
    expect(ok.body).toEqual({ effect: 'PAID' });
  });

  it('MF-03b control: with WRONG_PROVIDER not refused (payments.notification.refusal), a fake-channel callback makes a Stripe order PAID that Stripe never charged', async () => {
    const fresh = await m.buy(ACME, 'a3c', 'mp-a');
    const disarm = armMutation('payments.notification.refusal', ['WRONG_PROVIDER']);
    try {
      const charged = await fakeNotify(s, {
        notify_id: 'mp03b-c',
        merchant_order: fresh.orderId,
        kind: 'CHARGED',
        amount: 1990,
      });
      expect(charged.body).toEqual({ effect: 'PAID' });
    } finally {
      disarm();
    }
    expect((await m.order(fresh)).status).toBe('PAID'); // MF-03's check fires: settled by money at another provider
  });

  it('MF-04b control: with CURRENCY_MISMATCH not refused (payments.notification.refusal), 1990 yen pays a USD order of 1990', async () => {
    const o = await m.buy(ACME, 'a4b', 'mp-a');
    const disarm = armMutation('payments.notification.refusal', ['CURRENCY_MISMATCH']);
    try {
      const jpy = await stripeWebhook(
        s,
        { notify_id: 'mp04b-jpy', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990 },
        { currency: 'jpy' },
      );
      expect(jpy.body).toEqual({ effect: 'PAID' });
    } finally {
      disarm();
    }
    expect((await m.order(o)).status).toBe('PAID'); // MF-04's check fires: paid in the wrong currency
  });

  it('MF-04 a jpy PaymentIntent of 1990 for a USD order of 1990: CURRENCY_MISMATCH, unchanged; another amount: AMOUNT_MISMATCH', async () => {
    // Proves Stripe's currency is compared with STRIPE_CURRENCY, and the amount with the order's.
    const o = await m.buy(ACME, 'a4', 'mp-a');
    const before = await m.order(o);
    const jpy = await stripeWebhook(
      s,
      { notify_id: 'mp04-jpy', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990 },
      { currency: 'jpy' },
    );
    expect(jpy.body).toEqual({ effect: 'CURRENCY_MISMATCH' });
    expect(still(await m.order(o))).toEqual(still(before));
    expect((await m.order(o)).attention).toMatch(/^CURRENCY_MISMATCH: .* in jpy, the order is in usd/);
    const short = await stripeWebhook(s, {
      notify_id: 'mp04-amt',
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1,
    });
    expect(short.body).toEqual({ effect: 'AMOUNT_MISMATCH' });
    expect(still(await m.order(o))).toEqual(still(before));
  });

  it('MF-05 one notification id at two providers: both applied, neither swallowed as the other’s duplicate', async () => {
    // Proves notifications are deduplicated per (provider, notify_id).
    const a = await m.buy(ACME, 'a5', 'mp-a');
    const g = await m.buy(GLOBEX, 'g5', 'mp-g');
    const fromStripe = await stripeWebhook(s, {
      notify_id: 'mp05',
      merchant_order: a.orderId,
      kind: 'CHARGED',
      amount: 1990,
    });
    expect(fromStripe.body).toEqual({ effect: 'PAID' });
    // Alipay's notify_id equals Stripe's event id.
    const fromAlipay = await alipayNotify(s, {
      notify_id: 'evt_mp05',
      merchant_order: g.orderId,
      kind: 'CHARGED',
      amount: 1990,
      txn: '2026120722001400000000000005',
    });
    expect(fromAlipay.text).toBe('success');
    expect([(await m.order(a)).status, (await m.order(g)).status]).toEqual(['PAID', 'PAID']);
    expect(await m.effects(g.orderId)).toEqual(['alipay:PAID']);
    expect((await m.order(g)).payment).toEqual({ provider: null, provider_payment_id: '2026120722001400000000000005' });
  });

  it("MF-05b control: with the dedupe per provider switched off (payments.notification.per-provider), Alipay's notification is swallowed as Stripe's duplicate", async () => {
    // Proves MF-05's guard is what settles the second order: by notify_id alone it stays unpaid.
    const a = await m.buy(ACME, 'a5b', 'mp-a');
    const g = await m.buy(GLOBEX, 'g5b', 'mp-g');
    const before = await m.order(g);
    const disarm = armMutation('payments.notification.per-provider');
    try {
      const fromStripe = await stripeWebhook(s, {
        notify_id: 'mp05b',
        merchant_order: a.orderId,
        kind: 'CHARGED',
        amount: 1990,
      });
      expect(fromStripe.body).toEqual({ effect: 'PAID' });
      const fromAlipay = await alipayNotify(s, {
        notify_id: 'evt_mp05b',
        merchant_order: g.orderId,
        kind: 'CHARGED',
        amount: 1990,
        txn: '2026120722001400000000000055',
      });
      expect(fromAlipay.text).toBe('success');
    } finally {
      disarm();
    }
    expect([(await m.order(a)).status, (await m.order(g)).status]).toEqual(['PAID', before.status]);
    expect(await m.effects(g.orderId)).toEqual([]); // nothing recorded for globex's order: its money is unaccounted for
  });

  it('MF-06 a PaymentIntent that settled order X, named for order Y: PAYMENT_ID_IN_USE, Y unchanged, a note on Y', async () => {
    // Proves a provider payment id settles at most one order.
    const x = await m.buy(ACME, 'a6x', 'mp-a');
    expect((await m.pay(x)).body.status).toBe('PAID');
    const y = await m.buy(ACME, 'a6y', 'mp-a');
    const before = await m.order(y);
    const crossed = await stripeWebhook(
      s,
      { notify_id: 'mp06', merchant_order: y.orderId, kind: 'CHARGED', amount: 1990 },
      { intentOf: x.orderId },
    );
    expect(crossed.body).toEqual({ effect: 'PAYMENT_ID_IN_USE' });
    expect(still(await m.order(y))).toEqual(still(before));
    expect((await m.order(y)).attention).toMatch(new RegExp(`^PAYMENT_ID_IN_USE: .*settled order ${x.orderId}`));
    expect((await m.order(x)).status).toBe('PAID');
  });

  it('MF-07 reconciliation matches on (provider, order): a fake-channel CHARGE for a Stripe order is CHARGE_AT_OTHER_PROVIDER', async () => {
    // Proves a charge at another provider is not counted as the order's money.
    const o = await m.buy(ACME, 'a7', 'mp-a');
    expect((await m.pay(o)).body.status).toBe('PAID');
    const g = await m.buy(GLOBEX, 'g7', 'mp-g');
    expect((await m.pay(g)).body.status).toBe('PAID');
    // One unauthenticated charge at the built-in channel, naming the Stripe order.
    await control(d.fake, 'POST', '/charge', {
      merchant_order: o.orderId,
      amount: 1990,
      notify_url: 'http://127.0.0.1:1/',
    });
    const report = await m.reconcile(ACME);
    const mine = report.mismatches.filter((x) => x.order_id === o.orderId);
    expect(mine.map((x) => x.class)).toEqual(['CHARGE_AT_OTHER_PROVIDER']);
    expect(mine[0]?.detail).toMatch(/CHARGE of 1990 at fake .* at stripe/);
    // Each order paid at its own provider is clean.
    expect((await m.reconcile(GLOBEX)).mismatches.filter((x) => x.order_id === g.orderId)).toEqual([]);
  });

  it('MF-09 the admin order view names the provider and its payment id: Stripe pi_…, Alipay trade_no', async () => {
    // Proves an operator can see where an order's money is.
    const a = await m.buy(ACME, 'a9', 'mp-a');
    expect((await m.pay(a)).body.status).toBe('PAID');
    expect((await m.order(a)).payment).toEqual({ provider: 'stripe', provider_payment_id: paymentIntentId(a.orderId) });
    const g = await m.buy(GLOBEX, 'g9', 'mp-g');
    expect((await m.pay(g)).body.status).toBe('PAID');
    const view = await m.order(g);
    expect(view.payment.provider).toBe('alipay');
    // The double's trade_no (a real Alipay's is 28 digits), learnt from the pay's answer.
    expect(view.payment.provider_payment_id).toEqual(expect.any(String));
    const i = await m.buy(INITECH, 'i9', 'mp-i');
    expect((await m.pay(i)).body.status).toBe('PAID');
    expect((await m.order(i)).payment).toMatchObject({ provider: 'fake', provider_payment_id: expect.any(String) });
    const unpaid = await m.buy(INITECH, 'i9b', 'mp-i');
    expect((await m.order(unpaid)).payment).toEqual({ provider: null, provider_payment_id: null });
  });

  it('MF-11 a Stripe event 3 days late (Stripe’s retry window), keys and notification records purged: a PAID order stays PAID, no second confirm', async () => {
    // Proves a duplicate that outlived every record is still a duplicate, by the order's state.
    const o = await m.buy(ACME, 'a11', 'mp-a');
    expect((await m.pay(o)).body.status).toBe('PAID');
    const first = await stripeWebhook(s, {
      notify_id: 'mp11',
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
    });
    expect(first.body).toEqual({ effect: 'DUPLICATE' });
    const before = await m.order(o);
    s.clock.advance(3 * DAY_MS);
    expect(await purgeCompletedKeys(s.db.pool, new Date(s.clock.now().getTime() - DAY_MS))).toBeGreaterThan(0);
    await s.db.pool.query('DELETE FROM payment_notifications WHERE received_at < $1', [
      new Date(s.clock.now().getTime() - DAY_MS),
    ]);
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = $1', [o.orderId])).toBe(0);
    const late = await stripeWebhook(s, {
      notify_id: 'mp11',
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
    });
    expect([late.status, late.body]).toEqual([200, { effect: 'DUPLICATE' }]);
    const after = await m.order(o);
    expect(still(after)).toEqual(['PAID', before.version, 'CONFIRMED']);
    expect(await countRows(s.db, 'order_transitions', "order_id = $1 AND to_status = 'PAID'", [o.orderId])).toBe(1);
    expect(await countRows(s.db, 'outbox', "order_id = $1 AND event_type = 'ORDER_PAID'", [o.orderId])).toBe(1);
    const lines = (await statementOf(d.stripe, false)).filter((l) => l.merchant_order === o.orderId);
    expect(lines.map((l) => [l.type, l.amount])).toEqual([['CHARGE', 1990]]);
  });

  it('MF-12 a charge 30 days after the order was cancelled, records purged: refunded once with the fixed key, never PAID', async () => {
    // Proves the late-success path runs exactly once however late the money lands.
    const o = await m.buy(INITECH, 'i12', 'mp-i');
    expect((await s.call('POST', `/v1/orders/${o.orderId}/cancel`, { token: o.token })).status).toBe(200);
    s.clock.advance(30 * DAY_MS);
    await purgeCompletedKeys(s.db.pool, new Date(s.clock.now().getTime() - DAY_MS));
    await s.db.pool.query('DELETE FROM payment_notifications WHERE received_at < $1', [
      new Date(s.clock.now().getTime() - DAY_MS),
    ]);
    // A request that lingered for a month lands at the channel: the money moves, the callback follows.
    const charged = (await control(d.fake, 'POST', '/charge', {
      merchant_order: o.orderId,
      amount: 1990,
      notify_url: `${s.url}/v1/payment-notifications`,
    })) as { result: string; txn: string };
    expect(charged.result).toBe('CHARGED');
    const held = (await control(d.fake, 'GET', '/_control/callbacks/held')) as Array<{
      id: string;
      merchant_order: string;
    }>;
    const ids = held.filter((h) => h.merchant_order === o.orderId).map((h) => h.id);
    expect(ids).toHaveLength(1);
    await control(d.fake, 'POST', '/_control/callbacks/release', { ids });
    const view = await eventually(
      () => m.order(o),
      (v) => v.status === 'REFUNDED',
    );
    expect(view.timeline.map((t) => t.to)).toEqual(['CREATED', 'CANCELLED', 'REFUNDING', 'REFUNDED']);
    // The same charge reported again (a provider's retry after our records are gone): nothing more.
    const again = await fakeNotify(s, {
      notify_id: 'mp12-again',
      merchant_order: o.orderId,
      kind: 'CHARGED',
      amount: 1990,
      txn: charged.txn,
    });
    expect(again.body).toEqual({ effect: 'DUPLICATE' });
    const lines = (await statementOf(d.fake, true)).filter((l) => l.merchant_order === o.orderId);
    expect(lines.map((l) => [l.type, l.amount])).toEqual([
      ['CHARGE', 1990],
      ['REFUND', 1990],
    ]);
    const refunds = (await control(d.fake, 'GET', `/charges/${o.orderId}`)) as { status: string };
    expect(refunds.status).toBe('REFUNDED');
    expect((await m.order(o)).status).toBe('REFUNDED');
  });
});

describe('a tenant that changes provider keeps its earlier orders at the provider that took their money', () => {
  it('MF-08 acme moves from Stripe to Alipay: its earlier order is refunded at Stripe, once, with the fixed key', async () => {
    // Proves every call after the pay follows the recorded provider, not the tenant's configuration now.
    const d = await startDoubles();
    const db = await freshDatabase();
    try {
      for (const c of [d.fake, d.stripe, d.alipay]) await control(c, 'POST', '/_control/callbacks', { mode: 'HOLD' });
      const before = await startStack({ db, channelUrl: d.fake.url, config: mixedConfig(d, { [ACME]: 'stripe' }) });
      let o: { orderId: string; token: string; tenant: string };
      try {
        await createSku(before, { sku: 'mp-sw', stock: 2 }, ACME);
        const m = mixedStack(d, before);
        o = await m.buy(ACME, 'sw', 'mp-sw');
        expect((await m.pay(o)).body.status).toBe('PAID');
      } finally {
        await before.close();
      }
      // Restarted with acme on Alipay (Stripe's credentials still set: its money is still there).
      const after = await startStack({ db, channelUrl: d.fake.url, config: mixedConfig(d, { [ACME]: 'alipay' }) });
      try {
        const m = mixedStack(d, after);
        const refund = await after.call('POST', `/v1/admin/orders/${o.orderId}/refund`, {
          token: await m.admin(ACME),
          headers: { 'idempotency-key': 'mp08-refund' },
          body: { reason: 'MF-08: a refund after the tenant changed provider' },
        });
        expect([refund.status, refund.body.status]).toEqual([200, 'REFUNDED']);
        const atStripe = (await statementOf(d.stripe, false)).filter((l) => l.merchant_order === o.orderId);
        expect(atStripe.map((l) => l.type)).toEqual(['CHARGE', 'REFUND']);
        expect((await statementOf(d.alipay, false)).filter((l) => l.merchant_order === o.orderId)).toEqual([]);
        expect((await m.order(o)).payment.provider).toBe('stripe');
        // Its Stripe events still settle it; Alipay's do not.
        const fromAlipay = await alipayNotify(after, {
          notify_id: 'mp08',
          merchant_order: o.orderId,
          kind: 'REFUNDED',
          amount: 1990,
          txn: '2026120722001400000000000008',
        });
        expect(fromAlipay.text).toBe('success');
        expect(await mixedStack(d, after).effects(o.orderId)).toEqual(['alipay:WRONG_PROVIDER']);
        // Reconciliation judges it against Stripe: clean.
        expect((await m.reconcile(ACME)).mismatches.filter((x) => x.order_id === o.orderId)).toEqual([]);
      } finally {
        await after.close();
      }
    } finally {
      await db.drop();
      for (const c of [d.fake, d.stripe, d.alipay]) await c.close();
    }
  });
});

describe('the fake channel is off where nobody uses it', () => {
  it('MF-10 every tenant on Stripe: POST /v1/payment-notifications is 404 PROVIDER_NOT_CONFIGURED and records nothing', async () => {
    // Proves a signed callback to the built-in channel's route cannot mark a Stripe order PAID.
    const s = await startPaymentStack({ provider: 'stripe' });
    try {
      await createSku(s, { sku: 'mp10', stock: 1 });
      const o = await s.buy('u10', 'mp10');
      const answer = await s.notify({ notify_id: 'mp10', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990 });
      expect([answer.status, answer.body.code]).toEqual([404, 'PROVIDER_NOT_CONFIGURED']);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await countRows(s.db, 'payment_notifications', 'merchant_order = $1', [o.orderId])).toBe(0);
      expect((await s.order(o.orderId)).status).toBe('CREATED');
    } finally {
      await s.close();
    }
  });
});

describe('the start banner names the provider each tenant pays through', () => {
  it('MF-14 `flashpay payments …`: the default, then each tenant that pays elsewhere', () => {
    // Proves a person who switches FLASHPAY_PROVIDER on a data directory sees where new payments go.
    const providers = loadConfig({}).providers;
    expect(providersBanner(providers)).toBe('fake for every tenant');
    expect(providersBanner({ ...providers, provider: 'fake', tenants: { globex: 'alipay', acme: 'stripe' } })).toBe(
      'fake for every other tenant; acme → stripe, globex → alipay',
    );
  });
});

describe('recovery asks about a payment on the schedule of the provider that has it', () => {
  it('MF-15 an order recorded at Alipay keeps Alipay’s status-sync schedule after its tenant moved to Stripe', () => {
    // Proves recovery's query rhythm (Alipay's gateway limits callers) follows the recorded provider.
    const config = {
      ...loadConfig({}),
      providers: { ...loadConfig({}).providers, tenants: { acme: 'stripe' as const } },
    };
    const sync = statusSyncOf(config);
    expect(sync('acme', 'alipay')).toEqual(DEFAULT_STATUS_SYNC.alipay);
    expect(sync('acme', null)).toEqual(DEFAULT_STATUS_SYNC.stripe);
    expect(sync('globex', undefined)).toEqual(DEFAULT_STATUS_SYNC.fake);
  });
});
