import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUYER_WAIT_METHOD } from '../../src/channel/dialects/alipay.ts';
import { DEFAULT_STATUS_SYNC } from '../../src/platform/provider.config.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { appSdk } from '../support/providers/alipay.ts';
import { testStripeSdk } from '../support/providers/stripe.ts';

// Issue 37's per-provider status sync, against each real provider's double through its SDK: a
// payment waiting for its buyer is left alone until the provider's window, then closed there; a
// charge the provider never received (query and close both NOT_FOUND) fails only once no request
// of ours can still land. The clock is the stack's: windows pass without waiting for them.
describe.each(['stripe', 'alipay'] as const)('status sync per provider [%s]', (provider) => {
  let s: PaymentStack;
  const sync = DEFAULT_STATUS_SYNC[provider];
  beforeAll(async () => {
    s = await startPaymentStack({ provider, config: { payTimeoutMs: 2_000 } });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  async function buyerWillWait(orderId: string): Promise<void> {
    if (provider === 'stripe')
      await testStripeSdk(s.channel.url).rawRequest('POST', '/v1/test_helpers/payment_intents/require_action', {
        order_id: orderId,
      });
    else await appSdk(s.channel.url).exec(BUYER_WAIT_METHOD, { bizContent: { out_trade_no: orderId } });
  }

  it('SS-01 a payment waiting for its buyer: next_action, UNKNOWN and HELD inside the window; past it, closed at the provider → FAILED, unit back', async () => {
    await createSku(s, { sku: `ss1-${provider}`, stock: 2 });
    const o = await s.buy(`ss1-${provider}`, `ss1-${provider}`);
    await buyerWillWait(o.orderId);
    const paid = await s.pay(o.token, o.orderId);
    expect(paid.body).toMatchObject({ order_id: o.orderId, status: 'UNKNOWN' });
    expect(paid.body.next_action.type).toBe(provider === 'stripe' ? 'REQUIRES_ACTION' : 'WAIT_BUYER_PAY');
    if (provider === 'stripe') expect(paid.body.next_action.client_secret).toMatch(/_secret_/);

    s.clock.advance(sync.closePendingAfterMs - 1_000);
    const inside = await s.recover(0);
    expect(inside.body.resolved).toEqual({});
    expect(inside.body.still_pending).toContainEqual(
      expect.objectContaining({ order_id: o.orderId, reason: expect.stringContaining('waiting for the buyer') }),
    );
    expect((await s.order(o.orderId)).reservation.status).toBe('HELD');
    expect(await s.chargeRequests(o.orderId)).toBe(1);

    s.clock.advance(2_000);
    expect((await s.recover(0)).body.resolved).toMatchObject({ FAILED: 1 });
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['FAILED', 'RELEASED']);
    const requests = (await s.control('GET', '/_control/requests')) as { close: { by_order: Record<string, number> } };
    expect(requests.close.by_order[o.orderId]).toBe(1);
    expect((await s.statement()).lines.filter((l) => l.merchant_order === o.orderId)).toEqual([]);
  });

  it('SS-02 a charge the provider never received: UNKNOWN while a request might still land, FAILED after the provider’s window', async () => {
    await createSku(s, { sku: `ss2-${provider}`, stock: 2 });
    const o = await s.buy(`ss2-${provider}`, `ss2-${provider}`);
    // Cut before the double acts (twice: Alipay's HTTP client resends once after a reset).
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'RESET_CONNECTION',
      merchant_order: o.orderId,
      times: 2,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    const inside = await s.recover(0);
    expect(inside.body.resolved).toEqual({});
    expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
    expect(await skuCounters(s, `ss2-${provider}`)).toMatchObject({ held: 1 });

    s.clock.advance(sync.notFoundFinalAfterMs);
    expect((await s.recover(0)).body.resolved).toMatchObject({ FAILED: 1 });
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['FAILED', 'RELEASED']);
    expect(view.timeline.at(-1)?.reason).toContain('NOT_FOUND at the provider');
    expect(await skuCounters(s, `ss2-${provider}`)).toMatchObject({ available: 2, held: 0 });
  });
});
