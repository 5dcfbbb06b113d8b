import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentIntentId, stripeSignature } from '../../src/channel/dialects/stripe.ts';
import { refundKeyFor } from '../../src/payments/channel.client.ts';
import { stripeClient } from '../../src/payments/providers/stripe.ts';
import { countRows } from '../support/stack.ts';
import {
  createSku,
  eventually,
  startPaymentStack,
  type PaymentStack,
  unknownOrder as lostPay,
} from '../support/payments.ts';
import { LOST_REPLY_TIMEOUT_MS } from '../support/providers/index.ts';
import { TEST_STRIPE_WEBHOOK_SECRET, testStripeSdk } from '../support/providers/stripe.ts';
import { everyOf } from '../support/every.ts';

// flashpay's Stripe adapter (the official `stripe` SDK) against the Stripe double, over real HTTP
// and a real PostgreSQL: what reaches Stripe, and what Stripe's answers and webhooks do to orders.

type Held = Array<{ id: string; merchant_order: string; kind: string }>;

describe('Stripe: the adapter, its webhooks and reconciliation against the Stripe double', () => {
  let s: PaymentStack;
  const notificationRows = (orderId: string) =>
    countRows(s.db, 'payment_notifications', 'merchant_order = $1', [orderId]);
  const unknownOrder = async (user: string, sku: string) => {
    // Held: a webhook arriving before the pay's own answer would make it PAID, not UNKNOWN.
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    return lostPay(s, user, sku);
  };
  beforeAll(async () => {
    s = await startPaymentStack({ provider: 'stripe', config: { payTimeoutMs: LOST_REPLY_TIMEOUT_MS } });
  });
  afterAll(async () => s.close());

  it('ST-01 a pay reaches Stripe as one confirmed PaymentIntent: Idempotency-Key pi-<order>, metadata.order_id, the test key', async () => {
    // Proves the SDK's request is the documented one: a retry could only ever be the same PaymentIntent.
    await createSku(s, { sku: 'st1', stock: 2 });
    const o = await s.buy('st1-u', 'st1');
    expect((await s.pay(o.token, o.orderId)).body).toEqual({ order_id: o.orderId, status: 'PAID' });
    const creates = (await s.received()).filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents');
    const mine = creates.filter((r) => r.headers['idempotency-key'] === `pi-${o.orderId}`);
    expect(mine).toHaveLength(1);
    expect(mine[0]?.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(mine[0]?.headers.authorization).toMatch(/^Bearer …\w{4}$/); // the double never logs a key whole
    const found = await testStripeSdk(s.channel.url).paymentIntents.search({
      query: `metadata['order_id']:'${o.orderId}'`,
    });
    expect(found.data.map((pi) => [pi.status, pi.amount, pi.currency, pi.metadata.order_id])).toEqual([
      ['succeeded', 1990, 'usd', o.orderId],
    ]);
    expect((await s.statement()).lines.filter((l) => l.merchant_order === o.orderId).map((l) => l.type)).toEqual([
      'CHARGE',
    ]);
  });

  it('ST-02 a lost reply: UNKNOWN, then recovery finds the PaymentIntent by search (no id was ever received) → PAID', async () => {
    // Proves the lost-reply path: a timeout is UNKNOWN, and metadata search converges it exactly once.
    await createSku(s, { sku: 'st2', stock: 2 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await s.buy('st2-u', 'st2');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 1200,
    });
    expect((await s.pay(o.token, o.orderId)).body).toEqual({ order_id: o.orderId, status: 'UNKNOWN' });
    expect((await s.recover(0)).body.resolved).toMatchObject({ PAID: 1 });
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status, view.timeline.at(-1)?.reason]).toEqual([
      'PAID',
      'CONFIRMED',
      'query',
    ]);
    const searches = (await s.received()).filter((r) => r.path.startsWith('/v1/payment_intents/search?'));
    expect(searches.some((r) => decodeURIComponent(r.path).includes(`metadata['order_id']:'${o.orderId}'`))).toBe(true);
    expect(await s.chargeRequests(o.orderId)).toBe(1);
  });

  it('ST-03 3-D Secure: requires_action leaves the order UNKNOWN; the buyer confirms and the succeeded webhook pays it once', async () => {
    // Proves a PaymentIntent waiting for the buyer is neither a failure nor closed, and its webhook (twice) applies once.
    await createSku(s, { sku: 'st3', stock: 2 });
    await s.control('POST', '/_control/callbacks', { mode: 'AUTO', duplicates: 2 });
    const o = await s.buy('st3-u', 'st3');
    const sdk = testStripeSdk(s.channel.url);
    await sdk.rawRequest('POST', '/v1/test_helpers/payment_intents/require_action', { order_id: o.orderId });
    // The buyer is told what to do: Stripe.js completes 3-D Secure with the PaymentIntent's client secret.
    expect((await s.pay(o.token, o.orderId)).body).toEqual({
      order_id: o.orderId,
      status: 'UNKNOWN',
      next_action: { type: 'REQUIRES_ACTION', client_secret: expect.stringMatching(/^pi_\w+_secret_\w+$/) },
    });
    const [pi] = (await sdk.paymentIntents.search({ query: `metadata['order_id']:'${o.orderId}'` })).data;
    expect([pi?.status, pi?.client_secret]).toEqual(['requires_action', expect.stringMatching(/^pi_\w+_secret_\w+$/)]);
    // Recovery asks, hears "waiting for the buyer", and neither closes nor fails the order.
    await s.recover(0);
    expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
    expect((await s.statement()).lines.filter((l) => l.merchant_order === o.orderId)).toEqual([]);

    await sdk.paymentIntents.confirm(pi!.id); // the buyer passed 3-D Secure (Stripe.js, with the client secret)
    const view = await eventually(
      () => s.order(o.orderId),
      (v) => v.notifications.length === 1 && v.status === 'PAID',
    );
    expect(view.notifications[0]?.notify_id).toMatch(/^evt_/);
    expect(view.timeline.filter((t) => t.to === 'PAID')).toHaveLength(1);
    expect(await countRows(s.db, 'outbox', "order_id = $1 AND event_type = 'ORDER_PAID'", [o.orderId])).toBe(1);
    await eventually(
      async () =>
        (await s.control('GET', '/_control/notifications')) as Array<{ merchant_order: string; status: string }>,
      (list) =>
        everyOf(
          list.filter((n) => n.merchant_order === o.orderId),
          (n) => n.status === 'DELIVERED',
        ),
    );
    expect((await s.order(o.orderId)).notifications).toHaveLength(1); // the second copy: one id, DUPLICATE, no row
  });

  it('ST-04 a webhook with a forged or stale signature is 400 BAD_SIGNATURE and records nothing', async () => {
    await createSku(s, { sku: 'st4', stock: 1 });
    const o = await s.buy('st4-u', 'st4');
    const body = { notify_id: 'ntf_st4', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990, txn: 'x' };
    const forged = await s.notifyAs(body, { forged: true });
    const stale = await s.notifyAs(body, { at: Math.floor(Date.now() / 1000) - 600 });
    for (const answer of [forged, stale]) {
      expect(answer.status).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(answer.body.code).toBe('BAD_SIGNATURE');
    }
    const unsigned = await s.call('POST', '/v1/providers/stripe/webhook', { rawBody: '{}' });
    expect([unsigned.status, unsigned.body.code]).toEqual([400, 'BAD_SIGNATURE']);
    expect(await notificationRows(o.orderId)).toBe(0);
    expect((await s.order(o.orderId)).status).toBe('CREATED');
  });

  it('ST-05 one event delivered twice: one effect, then DUPLICATE; an unrelated event type, or a PaymentIntent without our order id, is IGNORED and not recorded', async () => {
    await createSku(s, { sku: 'st5', stock: 1 });
    const o = await unknownOrder('st5-u', 'st5');
    const body = { notify_id: 'ntf_st5', merchant_order: o.orderId, kind: 'CHARGED', amount: 1990, txn: 'x' };
    expect((await s.notifyAs(body)).body).toEqual({ effect: 'PAID' });
    expect((await s.notifyAs(body)).body).toEqual({ effect: 'DUPLICATE', recorded_effect: 'PAID' });
    expect(await notificationRows(o.orderId)).toBe(1);
    expect((await s.order(o.orderId)).notifications.map((n) => n.notify_id)).toEqual(['evt_st5']);

    const other = JSON.stringify({ id: 'evt_other', object: 'event', type: 'customer.created', data: { object: {} } });
    const ignored = await s.call('POST', '/v1/providers/stripe/webhook', {
      rawBody: other,
      headers: { 'stripe-signature': stripeSignature(TEST_STRIPE_WEBHOOK_SECRET, other) },
    });
    expect([ignored.status, ignored.body]).toEqual([200, { effect: 'IGNORED' }]);
    expect(await countRows(s.db, 'payment_notifications', 'notify_id = $1', ['evt_other'])).toBe(0);

    // A PaymentIntent another integration created on the same account: no metadata.order_id. Not
    // ours, answered IGNORED (a 4xx would make Stripe resend it for days), and nothing changes.
    const foreign = JSON.stringify({
      id: 'evt_foreign',
      object: 'event',
      type: 'payment_intent.succeeded',
      data: { object: { id: 'pi_foreign', object: 'payment_intent', amount_received: 1990, metadata: {} } },
    });
    const notOurs = await s.call('POST', '/v1/providers/stripe/webhook', {
      rawBody: foreign,
      headers: { 'stripe-signature': stripeSignature(TEST_STRIPE_WEBHOOK_SECRET, foreign) },
    });
    expect([notOurs.status, notOurs.body]).toEqual([200, { effect: 'IGNORED' }]);
    expect(await countRows(s.db, 'payment_notifications', 'notify_id = $1', ['evt_foreign'])).toBe(0);
  });

  it('ST-06 a late success after the unit was sold is refunded with the fixed key; the refund sent again is the same refund', async () => {
    // Proves the refund key is fixed per order: however often it is sent, Stripe holds one refund.
    await createSku(s, { sku: 'st6', stock: 1, hold_ttl_ms: 1000 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const o = await unknownOrder('st6-u', 'st6');
    s.clock.advance(2000);
    expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(1);
    await s.buy('st6-other', 'st6'); // the unit is sold again
    const held = (await s.control('GET', '/_control/callbacks/held')) as Held;
    const charged = held.find((h) => h.merchant_order === o.orderId && h.kind === 'CHARGED');
    await s.control('POST', '/_control/callbacks/release', { ids: [charged?.id] });
    await eventually(
      () => s.order(o.orderId),
      (v) => v.status === 'REFUNDED',
    );
    // A retry of the same refund (a crash before its answer was recorded): the same key, the same refund.
    const adapter = stripeClient(s.deps.config.providers.stripe, 5_000);
    const again = await adapter.refund(o.orderId, refundKeyFor(o.orderId), 1990);
    expect(again.kind).toBe('REFUNDED');
    const refunds = (await s.received()).filter((r) => r.path === '/v1/refunds');
    expect(refunds.map((r) => r.headers['idempotency-key'])).toEqual([
      refundKeyFor(o.orderId),
      refundKeyFor(o.orderId),
    ]);
    const lines = (await s.statement()).lines.filter((l) => l.merchant_order === o.orderId);
    expect(lines.map((l) => [l.type, l.amount])).toEqual([
      ['CHARGE', 1990],
      ['REFUND', 1990],
    ]);
    expect(await adapter.query(o.orderId)).toMatchObject({ kind: 'STATUS', status: 'REFUNDED' });

    // A charge.refunded whose Charge lacks the PaymentIntent's metadata: the order is read from the PaymentIntent.
    const [pi] = (
      await testStripeSdk(s.channel.url).paymentIntents.search({ query: `metadata['order_id']:'${o.orderId}'` })
    ).data;
    const charge = {
      id: 'ch_st6',
      object: 'charge',
      amount: 1990,
      amount_refunded: 1990,
      refunded: true,
      payment_intent: pi?.id,
      metadata: {},
    };
    const raw = JSON.stringify({
      id: 'evt_st6_bare',
      object: 'event',
      type: 'charge.refunded',
      data: { object: charge },
    });
    const bare = await s.call('POST', '/v1/providers/stripe/webhook', {
      rawBody: raw,
      headers: { 'stripe-signature': stripeSignature(TEST_STRIPE_WEBHOOK_SECRET, raw) },
    });
    expect(bare.status).toBe(200);
    expect(
      await countRows(s.db, 'payment_notifications', 'notify_id = $1 AND merchant_order = $2', [
        'evt_st6_bare',
        o.orderId,
      ]),
    ).toBe(1);
    expect((await s.order(o.orderId)).status).toBe('REFUNDED');
  });

  it('ST-07 reconciliation against Stripe’s balance transactions: clean after the mixed run; a planted charge is PROVIDER_RECORD_WITHOUT_ORDER', async () => {
    // Proves the statement read from Stripe matches flashpay's orders line for line, and a charge
    // only Stripe knows is reported, with its class.
    await createSku(s, { sku: 'st7', stock: 3 });
    const declined = await s.buy('st7-d', 'st7');
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DECLINE', merchant_order: declined.orderId });
    expect((await s.pay(declined.token, declined.orderId)).body.status).toBe('FAILED');
    await eventually(
      async () => (await s.recover(0)).body.pending as number,
      (pending) => pending === 0,
      10_000,
    );
    const clean = await s.call('GET', '/v1/admin/reconciliation', { token: s.operator });
    expect([clean.status, clean.body.mismatches, clean.body.pending]).toEqual([200, [], 0]);
    const provider = await adapterStatement();
    expect(clean.body.totals.channel_net).toBe(provider.net);
    expect(provider.net).toBe(provider.lines.reduce((n, l) => n + (l.type === 'CHARGE' ? l.amount : -l.amount), 0));

    // A charge made at Stripe for an order flashpay never had (another integration, a dashboard charge).
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const planted = 'ord_planted_st7';
    const pi = await testStripeSdk(s.channel.url).paymentIntents.create(
      { amount: 700, currency: 'usd', confirm: true, payment_method: 'pm_card_visa', metadata: { order_id: planted } },
      { idempotencyKey: `pi-${planted}` },
    );
    expect([pi.id, pi.status]).toEqual([paymentIntentId(planted), 'succeeded']);
    const report = await s.call('GET', '/v1/admin/reconciliation', { token: s.operator });
    // Named by order, and the net it adds shows in the totals (the planted charge's 700).
    expect(report.body.mismatches).toEqual(
      expect.arrayContaining([expect.objectContaining({ order_id: planted, class: 'PROVIDER_RECORD_WITHOUT_ORDER' })]),
    );
    const others = report.body.mismatches.filter((m: { order_id: string }) => m.order_id !== planted);
    expect(others.map((m: { class: string }) => m.class)).toEqual(['CHANNEL_NET_NE_PAID_SUM']);
    expect(report.body.totals.channel_net).toBe(provider.net + 700);
  });

  it('ST-09 the double answers as Stripe does: a wrong key is 401, a reused key with other parameters idempotency_error, an injected 500 api_error (UNKNOWN to flashpay)', async () => {
    const sdk = testStripeSdk(s.channel.url);
    const params = {
      amount: 500,
      currency: 'usd',
      confirm: true,
      payment_method: 'pm_card_visa',
      metadata: { order_id: 'ord_st9' },
    };
    const wrongKey = await sdk.paymentIntents
      .create(params, { apiKey: 'sk_test_wrong_wrong_wrong' })
      .catch((e: unknown) => e);
    expect(wrongKey).toMatchObject({ type: 'StripeAuthenticationError', statusCode: 401 });
    await sdk.paymentIntents.create(params, { idempotencyKey: 'st9-key' });
    const reused = await sdk.paymentIntents
      .create({ ...params, amount: 600 }, { idempotencyKey: 'st9-key' })
      .catch((e: unknown) => e);
    expect(reused).toMatchObject({ type: 'StripeIdempotencyError', statusCode: 400 });
    const replay = await sdk.paymentIntents.create(params, { idempotencyKey: 'st9-key' });
    expect([replay.status, replay.lastResponse.statusCode]).toEqual(['succeeded', 200]);

    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'ERROR_500', merchant_order: 'ord_st9b' });
    const adapter = stripeClient(s.deps.config.providers.stripe, 5_000);
    expect(await adapter.charge('ord_st9b', 500, '')).toMatchObject({
      kind: 'UNKNOWN',
      reason: expect.stringMatching(/api_error 500/),
    });
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DECLINE', merchant_order: 'ord_st9c' });
    expect(await adapter.charge('ord_st9c', 500, '')).toMatchObject({ kind: 'DECLINED' });
    expect(await adapter.query('ord_st9c')).toMatchObject({ kind: 'STATUS', status: 'DECLINED' });
    expect(await adapter.close('ord_st9-never')).toEqual({ kind: 'STATUS', status: 'NOT_FOUND' });
  });

  const adapterStatement = () => stripeClient(s.deps.config.providers.stripe, 5_000).statement();
});

describe('Stripe webhook route when no tenant pays through Stripe', () => {
  it('ST-08 answers 404 PROVIDER_NOT_CONFIGURED and records nothing', async () => {
    const s = await startPaymentStack({ provider: 'fake' });
    try {
      const raw = JSON.stringify({
        id: 'evt_x',
        object: 'event',
        type: 'payment_intent.succeeded',
        data: { object: {} },
      });
      const answer = await s.call('POST', '/v1/providers/stripe/webhook', {
        rawBody: raw,
        headers: { 'stripe-signature': stripeSignature(TEST_STRIPE_WEBHOOK_SECRET, raw) },
      });
      expect([answer.status, answer.body.code]).toEqual([404, 'PROVIDER_NOT_CONFIGURED']);
      expect(await countRows(s.db, 'payment_notifications', 'notify_id = $1', ['evt_x'])).toBe(0);
    } finally {
      await s.close();
    }
  });
});
