import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentIntentId } from '../../src/channel/dialects/stripe.ts';
import { MAX_PROVIDER_NOTE_CHARS } from '../../src/payments/channel.client.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, eventually, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { providersUnderTest, type TestProvider } from '../support/providers/index.ts';
import { appSdk } from '../support/providers/alipay.ts';
import { testStripeSdk } from '../support/providers/stripe.ts';

// Issue 48, "settle what the provider already did": a refund made at the provider on its own (its
// dashboard) converges the order to REFUNDED with exactly one refund at the provider, whether
// flashpay learns it by notification, by its own refund call ("already refunded") or by
// reconciliation; a refusal's note is a sentence and the provider's code, never its raw body.
// Real PostgreSQL, each provider's official SDK against its double over real HTTP.

const PRICE = 1990;

/** A refund made at the provider outside flashpay (its dashboard), under a key that is not ours. */
async function dashboardRefund(s: PaymentStack, provider: TestProvider, orderId: string): Promise<void> {
  if (provider === 'fake') {
    await s.control('POST', '/refund', { merchant_order: orderId, refund_key: `dashboard-${orderId}`, amount: PRICE });
  } else if (provider === 'stripe') {
    const refund = await testStripeSdk(s.channel.url).refunds.create({ payment_intent: paymentIntentId(orderId) });
    expect(refund.status).toBe('succeeded');
  } else {
    const node = (await appSdk(s.channel.url).exec('alipay.trade.refund', {
      bizContent: { out_trade_no: orderId, refund_amount: '19.90', out_request_no: `dashboard-${orderId}` },
    })) as Record<string, unknown>;
    expect(node.code).toBe('10000');
  }
}

/**
 * Providers whose query sees a refund made under another key (Stripe's PaymentIntent shows its
 * charge refunded; the fake channel's charge is REFUNDED). Alipay's refund query is by our
 * out_request_no, so its query cannot: its notification or our refund converges the order (AR-01,
 * AR-02), and reconciliation keeps listing it until then (docs/reconciliation.md).
 */
const QUERY_SEES_A_DASHBOARD_REFUND: readonly TestProvider[] = ['fake', 'stripe'];

describe.each(providersUnderTest())('a refund the provider already made [%s]', (provider) => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ provider, config: { payTimeoutMs: 5_000 } });
  });
  afterAll(async () => s.close());

  const refundLines = async (orderId: string) =>
    (await s.statement()).lines.filter((l) => l.type === 'REFUND' && l.merchant_order === orderId);
  const refundCalls = async (orderId: string) =>
    ((await s.control('GET', '/_control/requests')) as { refund: { by_order: Record<string, number> } }).refund
      .by_order[orderId] ?? 0;
  const hold = () => s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  const auto = () => s.control('POST', '/_control/callbacks', { mode: 'AUTO' });
  async function paidOrder(sku: string): Promise<string> {
    await createSku(s, { sku, stock: 2, price: PRICE });
    const o = await s.buy(`${sku}-u`, sku);
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('PAID');
    expect(await skuCounters(s, sku)).toMatchObject({ available: 1, confirmed: 1 });
    return o.orderId;
  }

  it(`AR-01 [${provider}] dashboard refund, then its notification: PAID → REFUNDED, units back, no refund call of ours, one refund`, async () => {
    // Proves the notification path: the decider converges a PAID order on the provider's word,
    // makes no refund call (the provider counted one refund request: the dashboard's).
    const orderId = await paidOrder(`ar1${provider}`);
    await dashboardRefund(s, provider, orderId);
    const view = await eventually(
      () => s.order(orderId),
      (v) => v.status === 'REFUNDED',
    );
    expect(view.timeline.filter((t) => t.to === 'REFUNDED')).toEqual([
      expect.objectContaining({ from: 'PAID', reason: expect.stringMatching(/the provider already refunded/) }),
    ]);
    expect(view.attention).toBeNull();
    expect(await skuCounters(s, `ar1${provider}`)).toMatchObject({ available: 2, confirmed: 0, held: 0 });
    expect(await refundLines(orderId)).toHaveLength(1);
    expect(await refundCalls(orderId)).toBe(1);
  });

  it(`AR-02 [${provider}] dashboard refund (notification not delivered), then an operator refund: REFUNDED, not stuck REFUNDING, one refund`, async () => {
    // Proves the refund-call path: the provider's "already refunded" is a REFUNDED answer.
    const orderId = await paidOrder(`ar2${provider}`);
    await hold();
    try {
      await dashboardRefund(s, provider, orderId);
      expect((await s.order(orderId)).status).toBe('PAID');
      const refunded = await s.call('POST', `/v1/admin/orders/${orderId}/refund`, {
        token: s.admin,
        headers: { 'idempotency-key': `ar2-${provider}` },
        body: { reason: 'the buyer asked for the money back (AR-02)' },
      });
      expect([refunded.status, refunded.body.status], refunded.text).toEqual([200, 'REFUNDED']);
      const view = await s.order(orderId);
      expect([view.status, view.attention]).toEqual(['REFUNDED', null]);
      expect(view.timeline.at(-1)?.reason).toMatch(/already refunded/);
      expect(await skuCounters(s, `ar2${provider}`)).toMatchObject({ available: 2, confirmed: 0, held: 0 });
      expect(await refundLines(orderId)).toHaveLength(1);
    } finally {
      await auto();
    }
    // The dashboard refund's notification, delivered late, changes nothing more.
    const held = (await s.control('GET', '/_control/callbacks/held')) as Array<{ id: string; merchant_order: string }>;
    const ids = held.filter((h) => h.merchant_order === orderId).map((h) => h.id);
    expect(ids.length).toBeGreaterThan(0);
    await s.control('POST', '/_control/callbacks/release', { ids });
    await eventually(
      () => s.order(orderId),
      (v) => v.notifications.some((n) => n.kind === 'REFUNDED'),
    );
    const view = await s.order(orderId);
    expect(view.timeline.filter((t) => t.to === 'REFUNDED')).toHaveLength(1);
    expect(await refundLines(orderId)).toHaveLength(1);
  });

  if (QUERY_SEES_A_DASHBOARD_REFUND.includes(provider))
    it(`AR-03 [${provider}] dashboard refund (notification not delivered), then reconciliation: PAID → REFUNDED once; the next pass is clean`, async () => {
      // Proves the reconciliation path: the statement's REFUND and the query's REFUNDED agree, the
      // answer goes through the decider.
      const orderId = await paidOrder(`ar3${provider}`);
      await hold();
      try {
        await dashboardRefund(s, provider, orderId);
        const report = await s.call('GET', '/v1/admin/reconciliation', { token: s.operator });
        expect(report.status, report.text).toBe(200);
        expect(report.body.mismatches).toContainEqual(
          expect.objectContaining({ order_id: orderId, class: 'PAID_BUT_REFUNDED' }),
        );
        const view = await s.order(orderId);
        expect([view.status, view.attention]).toEqual(['REFUNDED', null]);
        expect(view.timeline.filter((t) => t.to === 'REFUNDED')).toEqual([
          expect.objectContaining({ from: 'PAID', reason: expect.stringMatching(/^reconciliation: /) }),
        ]);
        expect(await skuCounters(s, `ar3${provider}`)).toMatchObject({ available: 2, confirmed: 0, held: 0 });
        const again = await s.call('GET', '/v1/admin/reconciliation', { token: s.operator });
        expect((again.body.mismatches as Array<{ order_id: string }>).filter((m) => m.order_id === orderId)).toEqual(
          [],
        );
        expect((await s.order(orderId)).timeline.filter((t) => t.to === 'REFUNDED')).toHaveLength(1);
        expect(await refundLines(orderId)).toHaveLength(1);
      } finally {
        await auto();
      }
    });

  it(`AR-04 [${provider}] a refund the provider refuses leaves a note of one sentence and the provider's code, bounded, never its body`, async () => {
    // Proves the note's shape on a real refusal: an amount the charge does not have (planted).
    const orderId = await paidOrder(`ar4${provider}`);
    await s.db.pool.query('UPDATE orders SET amount = amount + 1 WHERE order_id = $1', [orderId]);
    const refunded = await s.call('POST', `/v1/admin/orders/${orderId}/refund`, {
      token: s.admin,
      headers: { 'idempotency-key': `ar4-${provider}` },
      body: { reason: 'the buyer asked for the money back (AR-04)' },
    });
    expect([refunded.status, refunded.body.status], refunded.text).toEqual([200, 'REFUNDING']);
    const view = await s.order(orderId);
    expect(view.status).toBe('REFUNDING');
    const note = view.attention ?? '';
    expect(note).toMatch(/^refund refused by the provider: [^{}\n]+ \([A-Za-z0-9_.]+\)$/);
    expect(note.length).toBeLessThanOrEqual(MAX_PROVIDER_NOTE_CHARS + 'refund refused by the provider: '.length);
    expect(note).not.toMatch(/"|merchant_order|https?:/);
    expect(await refundLines(orderId)).toHaveLength(0);
  });
});
