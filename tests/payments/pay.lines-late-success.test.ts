import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placeOrder, skuCounters } from '../support/fixtures.ts';
import { countRows } from '../support/stack.ts';
import { createSku, eventually, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

type Held = Array<{ id: string; merchant_order: string; kind: string }>;

describe('a multi-line order whose holds expired while its payment was unknown', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  async function unknownTwoLineOrder(user: string, skus: [string, string]) {
    const token = await s.token(TENANT, user);
    const created = await placeOrder(s, token, `${user}-order`, {
      lines: [{ sku: skus[1] }, { sku: skus[0], quantity: 2 }],
    });
    expect(created.status).toBe(201);
    const orderId = created.body.order_id as string;
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: orderId,
      ms: 400,
    });
    expect((await s.pay(token, orderId)).body.status).toBe('UNKNOWN');
    return { orderId, token, amount: created.body.amount as number };
  }

  async function lateSuccess(orderId: string) {
    const held = (await s.control('GET', '/_control/callbacks/held')) as Held;
    await s.control('POST', '/_control/callbacks/release', {
      ids: held.filter((h) => h.merchant_order === orderId && h.kind === 'CHARGED').map((h) => h.id),
    });
    return eventually(
      () => s.order(orderId),
      (v) => v.notifications.length === 1,
    );
  }

  it('L-06 the late success re-reserves every line under its own /r2 key and confirms them all: PAID_REHELD', async () => {
    // Proves the forward compensation covers every line, not only the first.
    await createSku(s, { sku: 'm6a', stock: 2, hold_ttl_ms: 1000 });
    await createSku(s, { sku: 'm6b', stock: 1, hold_ttl_ms: 1000 });
    const o = await unknownTwoLineOrder('m6-user', ['m6a', 'm6b']);
    s.clock.advance(2000);
    expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(2);
    const view = await lateSuccess(o.orderId);
    expect([view.status, view.notifications[0]?.effect]).toEqual(['PAID', 'PAID_REHELD']);
    const buyerView = await s.call('GET', `/v1/orders/${o.orderId}`, { token: o.token });
    expect(buyerView.body.reservations).toEqual([
      { sku: 'm6a', key: `${o.orderId}/r2`, status: 'CONFIRMED' },
      { sku: 'm6b', key: `${o.orderId}/l2/r2`, status: 'CONFIRMED' },
    ]);
    expect(await Promise.all([skuCounters(s, 'm6a'), skuCounters(s, 'm6b')])).toEqual([
      expect.objectContaining({ total: 2, available: 0, held: 0, confirmed: 2 }),
      expect.objectContaining({ total: 1, available: 0, held: 0, confirmed: 1 }),
    ]);
    expect((await s.statement()).lines.filter((l) => l.type === 'REFUND')).toEqual([]);
  });

  it('L-07 one line cannot be re-reserved (its unit was sold again): no line is kept, the whole amount is refunded once', async () => {
    // Proves the backward compensation is all-or-nothing: the line that could be re-held is undone too.
    await createSku(s, { sku: 'm7a', stock: 2, hold_ttl_ms: 1000 });
    await createSku(s, { sku: 'm7b', stock: 1, hold_ttl_ms: 1000 });
    const o = await unknownTwoLineOrder('m7-user', ['m7a', 'm7b']);
    s.clock.advance(2000);
    expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(2);
    expect((await s.buy('m7-other', 'm7b')).orderId).toBeTruthy(); // the last m7b goes to someone else
    const view = await lateSuccess(o.orderId);
    expect(view.notifications[0]?.effect).toBe('REFUNDING');
    const done = await eventually(
      () => s.order(o.orderId),
      (v) => v.status === 'REFUNDED',
    );
    expect(done.timeline.at(-2)?.reason).toMatch(/stock lost \(SOLD_OUT\)/);
    const refunds = (await s.statement()).lines.filter((l) => l.type === 'REFUND' && l.merchant_order === o.orderId);
    expect(refunds.map((l) => l.amount)).toEqual([o.amount]);
    expect(
      await countRows(s.db, 'reservations', "request_key LIKE $1 AND request_key LIKE '%/r2'", [`${o.orderId}%`]),
    ).toBe(0);
    expect(await Promise.all([skuCounters(s, 'm7a'), skuCounters(s, 'm7b')])).toEqual([
      expect.objectContaining({ total: 2, available: 2, held: 0, confirmed: 0 }),
      expect.objectContaining({ total: 1, available: 0, held: 1, confirmed: 0 }),
    ]);
    await s.recover();
    const report = await s.call('GET', '/v1/admin/reconciliation', { token: s.admin });
    expect(report.body.mismatches).toEqual([]);
  });

  it('L-08 a multi-line order paid from the wallet confirms every line in the debit transaction', async () => {
    // Proves wallet pay and several lines compose: one debit of the sum, every unit confirmed.
    await createSku(s, { sku: 'm8a', stock: 3, price: 100 });
    await createSku(s, { sku: 'm8b', stock: 3, price: 250 });
    const token = await s.token(TENANT, 'm8-user');
    await s.call('POST', '/v1/admin/wallets/m8-user/credits', {
      token: s.admin,
      body: { amount: 1000, reason: 'test top-up' },
      headers: { 'idempotency-key': 'm8-fund' },
    });
    const created = await placeOrder(s, token, 'm8-order', {
      lines: [
        { sku: 'm8b', quantity: 2 },
        { sku: 'm8a', quantity: 3 },
      ],
    });
    expect(created.body.amount).toBe(800);
    const paid = await s.call('POST', `/v1/orders/${created.body.order_id}/pay`, {
      token,
      body: { method: 'wallet' },
      headers: { 'idempotency-key': 'm8-pay' },
    });
    expect(paid.body.status).toBe('PAID');
    expect((await s.call('GET', '/v1/wallet', { token })).body).toEqual({ balance: 200 });
    expect(await Promise.all([skuCounters(s, 'm8a'), skuCounters(s, 'm8b')])).toEqual([
      expect.objectContaining({ available: 0, held: 0, confirmed: 3 }),
      expect.objectContaining({ available: 1, held: 0, confirmed: 2 }),
    ]);
  });
});
