import { waitFor } from '../support/poll.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayload } from '../../src/platform/signature.ts';
import { expectProblem, PAY_TIMEOUT_MS, SECRETS, type Target } from './attacker.ts';
import { ACME, launchAcme } from './acme.ts';

// Issue 11, as an attacker on loopback would try it (OWASP API Security Top 10 2023), against a
// real `flashpay start`. Every refusal is checked for its status, its problem+json code, and that
// nothing changed: rows, statuses, SKU counters, the outbox and the provider's ledger.
// Tenants, scopes and secrets here; tokens, inputs and floods in security.inputs.test.ts.
const FLOOR_MS = PAY_TIMEOUT_MS + 1_000; // the pay timeout + the margin (recovery.routes.ts)

describe('security: tenants, scopes, secrets, the double', () => {
  let t: Target;
  let acmeAdmin: string;
  let evilAdmin: string;
  let operator: string;
  let paidOrder = '';
  let expiredOrder = '';
  let order: (token: string, key: string, body: unknown) => ReturnType<Target['call']>;
  let unchanged: (attack: () => Promise<void>) => Promise<void>;

  beforeAll(async () => {
    ({ t, acmeAdmin, evilAdmin, operator, paidOrder, expiredOrder, order, unchanged } = await launchAcme());
  }, 120_000);
  afterAll(async () => t?.stop());

  it("API1/API5: another tenant's admin reads and moves nothing of acme on any admin route", async () => {
    await unchanged(async () => {
      const report = await t.call('GET', '/v1/admin/reconciliation', { token: evilAdmin });
      expect(report.status).toBe(200);
      expect(JSON.stringify(report.body)).not.toContain(paidOrder);
      expect(report.body.totals).toMatchObject({ paid: 0, paid_sum: 0, channel_net: 0, confirmed: 0 });
      const recovery = await t.call('POST', '/v1/admin/recovery/run', {
        token: evilAdmin,
        body: { stale_after_ms: FLOOR_MS },
      });
      expect([recovery.status, recovery.body.examined, recovery.body.outbox]).toEqual([200, 0, undefined]);
      expect(JSON.stringify(recovery.body)).not.toContain(paidOrder);
      expectProblem(await t.call('POST', '/v1/admin/outbox/drain', { token: evilAdmin }), 403, 'FORBIDDEN');
      expect((await t.call('GET', '/v1/admin/outbox/dead', { token: evilAdmin })).body).toEqual({ events: [] });
      expect((await t.call('POST', '/v1/admin/outbox/dead/redrive', { token: evilAdmin, body: {} })).body).toEqual({
        redriven: 0,
      });
      expect((await t.call('POST', '/v1/admin/expiry/run', { token: evilAdmin })).body).toEqual({ released: 0 });
      expectProblem(await t.call('GET', '/v1/admin/skus/tee', { token: evilAdmin }), 404, 'SKU_NOT_FOUND');
      expectProblem(await t.call('GET', `/v1/admin/orders/${paidOrder}`, { token: evilAdmin }), 404, 'ORDER_NOT_FOUND');
      expectProblem(await t.call('GET', `/v1/admin/fulfillment/${paidOrder}`, { token: evilAdmin }), 404, 'NOT_FOUND');
      expectProblem(
        await t.call('POST', '/v1/admin/reservations/expire', { token: evilAdmin, body: { order_id: expiredOrder } }),
        404,
        'ORDER_NOT_FOUND',
      );
    });
    // Contrast: acme's own admin sees its dead event and releases its expired hold.
    expect((await t.call('GET', '/v1/admin/outbox/dead', { token: acmeAdmin })).body.events).toHaveLength(1);
    expect((await t.call('POST', '/v1/admin/expiry/run', { token: acmeAdmin })).body).toEqual({ released: 1 });
  });

  it('operator scope acts across tenants: the whole reconciliation, the drain', async () => {
    const report = await t.call('GET', '/v1/admin/reconciliation', { token: operator });
    expect(report.body.totals).toMatchObject({ paid: 1, paid_sum: 1990, channel_net: 1990 });
    expect((await t.call('POST', '/v1/admin/outbox/dead/redrive', { token: operator, body: {} })).body).toEqual({
      redriven: 1,
    });
    expect((await t.call('POST', '/v1/admin/outbox/drain', { token: operator })).status).toBe(200);
    expect((await t.call('GET', `/v1/admin/fulfillment/${paidOrder}`, { token: acmeAdmin })).body.ship_count).toBe(1);
  });

  it('stale_after_ms below the floor is refused; a pay in flight (250 ms provider latency) is never closed by recovery', async () => {
    await unchanged(async () => {
      const refused = await t.call('POST', '/v1/admin/recovery/run', { token: acmeAdmin, body: { stale_after_ms: 0 } });
      expectProblem(refused, 400, 'VALIDATION');
      expect(refused.body.minimum).toBe(FLOOR_MS);
      expectProblem(
        await t.call('POST', '/v1/admin/recovery/run', {
          token: operator,
          body: { stale_after_ms: PAY_TIMEOUT_MS - 1 },
        }),
        400,
        'VALIDATION',
      );
      expectProblem(
        await t.call('POST', '/v1/admin/recovery/run', { token: operator, body: { stale_after_ms: FLOOR_MS - 1 } }),
        400,
        'VALIDATION',
      );
    });
    const bob = await t.token(ACME, 'bob');
    const id = (await order(bob, 'bob-1', { sku: 'tee' })).body.order_id as string;
    const control = { authorization: `Bearer ${SECRETS.control}` };
    expect(
      (
        await t.call('POST', `${t.channel}/_control/faults`, {
          headers: control,
          body: { op: 'charge', kind: 'DELAY_REQUEST', merchant_order: id, ms: 250 },
        })
      ).status,
    ).toBe(200);
    const paying = t.call('POST', `/v1/orders/${id}/pay`, { token: bob, headers: { 'idempotency-key': 'bob-pay' } });
    const passes = await Promise.all(
      [evilAdmin, acmeAdmin, operator].map((token) =>
        t.call('POST', '/v1/admin/recovery/run', { token, body: { stale_after_ms: FLOOR_MS } }),
      ),
    );
    expect(passes.map((p) => p.status)).toEqual([200, 200, 200]);
    expect((await paying).body.status).toBe('PAID');
    // The provider's notification of this pay arrives on its own: let it land before the next
    // case compares snapshots.
    await waitFor(
      async () =>
        ((await t.call('GET', `/v1/admin/orders/${id}`, { token: acmeAdmin })).body.notifications?.length ?? 0) > 0,
      'the notification of bob’s pay',
      15_000,
    );
  });

  it("a fulfilment event signed with the provider's secret is refused: that secret cannot ship orders", async () => {
    const event = JSON.stringify({
      event_id: 'forged-1',
      order_id: expiredOrder,
      event_type: 'ORDER_PAID',
      order_version: 99,
      payload: {},
    });
    await unchanged(async () => {
      expectProblem(
        await t.call('POST', '/v1/fulfillment/events', {
          raw: event,
          headers: { 'flashpay-signature': signPayload(SECRETS.notify, event) },
        }),
        400,
        'BAD_SIGNATURE',
      );
      expectProblem(
        await t.call('POST', '/v1/fulfillment/events', {
          raw: event,
          headers: { 'flashpay-signature': signPayload(SECRETS.jwt, event) },
        }),
        400,
        'BAD_SIGNATURE',
      );
    });
  });

  it('the provider double: /_control needs its token, notify_url only to allowed hosts', async () => {
    await unchanged(async () => {
      const forge = {
        merchant_order: expiredOrder,
        kind: 'CHARGED',
        amount: 500,
        notify_url: `${t.api}/v1/payment-notifications`,
      };
      expectProblem(
        await t.call('POST', `${t.channel}/_control/callbacks/send`, { body: forge }),
        401,
        'UNAUTHENTICATED',
      );
      expectProblem(
        await t.call('POST', `${t.channel}/_control/callbacks/send`, {
          body: forge,
          headers: { authorization: `Bearer ${SECRETS.jwt}` },
        }),
        401,
        'UNAUTHENTICATED',
      );
      expectProblem(await t.call('POST', `${t.channel}/_control/reset`, {}), 401, 'UNAUTHENTICATED');
      // However the path is spelt (issue 40; every spelling of every route: path-variants.test.ts).
      for (const control of ['/%5Fcontrol', '/%5fcontrol', '/%5F%63ontrol'])
        expectProblem(
          await t.call('POST', `${t.channel}${control}/callbacks/send`, { body: forge }),
          401,
          'UNAUTHENTICATED',
        );
      const elsewhere = await t.call('POST', `${t.channel}/charge`, {
        body: { merchant_order: 'ord_probe', amount: 100, notify_url: 'http://169.254.169.254/latest/meta-data' },
      });
      expectProblem(elsewhere, 400, 'VALIDATION');
    });
    expect(new URL(t.channel).hostname).toBe('127.0.0.1');
  });
});
