import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER, signPayload } from '../../src/platform/signature.ts';
import { checkEventIntegrity } from '../../src/reconcile/index.ts';
import { createSku, placeOrder, TENANT } from '../support/fixtures.ts';
import { startStack, TEST_EVENTS_SECRET, type Stack } from '../support/stack.ts';

// Issue 38, item 1: every ORDER_* event was built from the order row's `sku` and `quantity` (its
// first line), so the consumer shipped one line of an order of several and per-SKU reports missed it.
describe('events of orders of several lines (issue 38)', () => {
  let s: Stack;
  let admin: string;
  let operator: string;
  beforeAll(async () => {
    s = await startStack();
    admin = await s.token(TENANT, 'ops', 'admin');
    operator = await s.token(TENANT, 'ops', 'operator');
  });
  afterAll(async () => s.close());

  const events = async (orderId: string) =>
    (
      await s.db.pool.query<{ event_type: string; payload: Record<string, unknown> }>(
        'SELECT event_type, payload FROM outbox WHERE order_id = $1 ORDER BY event_id',
        [orderId],
      )
    ).rows;

  async function walletPaid(user: string, body: Record<string, unknown>): Promise<string> {
    const buyer = await s.token(TENANT, user);
    const created = await placeOrder(s, buyer, `${user}-create`, body);
    expect(created.status, created.text).toBe(201);
    const credit = await s.call('POST', `/v1/admin/wallets/${user}/credits`, {
      token: admin,
      body: { amount: created.body.amount, reason: 'test top-up' },
      headers: { 'idempotency-key': `${user}-credit` },
    });
    expect(credit.status, credit.text).toBe(201);
    const paid = await s.call('POST', `/v1/orders/${created.body.order_id}/pay`, {
      token: buyer,
      body: { method: 'wallet' },
      headers: { 'idempotency-key': `${user}-pay` },
    });
    expect([paid.status, paid.body.status], paid.text).toEqual([200, 'PAID']);
    return created.body.order_id as string;
  }

  it('LE-01 a paid order of three lines: its ORDER_PAID names every line, the consumer ships every line, each SKU counts it', async () => {
    // Proves the event carries the snapshot taken at create (not the catalogue now, not line 1 only),
    // the consumer's shipment names all three lines, and /outcomes counts the order under each SKU.
    await createSku(s, { sku: 'le1a', name: 'Tea', price: 300, stock: 10 });
    await createSku(s, { sku: 'le1b', name: 'Cup', price: 1200, stock: 10 });
    await createSku(s, { sku: 'le1c', name: 'Pot', price: 4500, stock: 10 });
    const orderId = await walletPaid('le1-user', {
      lines: [{ sku: 'le1c' }, { sku: 'le1a', quantity: 3 }, { sku: 'le1b', quantity: 2 }],
    });
    // A later price and name change alters no event of this order.
    await s.call('PATCH', '/v1/admin/skus/le1b', { token: admin, body: { price: 1, name: 'Mug' } });
    const lines = [
      { sku: 'le1a', name: 'Tea', quantity: 3, unit_price: 300 },
      { sku: 'le1b', name: 'Cup', quantity: 2, unit_price: 1200 },
      { sku: 'le1c', name: 'Pot', quantity: 1, unit_price: 4500 },
    ];
    const [paid] = await events(orderId);
    expect(paid?.event_type).toBe('ORDER_PAID');
    expect(paid?.payload).toEqual({
      order_id: orderId,
      tenant_id: TENANT,
      user_id: 'le1-user',
      amount: 7800,
      status: 'PAID',
      version: expect.any(Number),
      lines,
    });
    expect((await s.call('POST', '/v1/admin/outbox/drain', { token: operator })).body).toMatchObject({ failed: 0 });
    const shipped = await s.call('GET', `/v1/admin/fulfillment/${orderId}`, { token: admin });
    expect([shipped.body.ship_count, shipped.body.shipped_lines]).toEqual([
      1,
      lines.map(({ sku, quantity }) => ({ sku, quantity })),
    ]);
    for (const sku of ['le1a', 'le1b', 'le1c']) {
      const outcomes = await s.call('GET', `/v1/admin/skus/${sku}/outcomes`, { token: admin });
      expect([sku, outcomes.body.statuses]).toEqual([sku, { PAID: 1 }]);
    }
    expect(await checkEventIntegrity(s.db.pool, TENANT)).toMatchObject({ lines_disagree: 0, duplicate_shipments: 0 });
  });

  it('LE-02 a one-line order keeps the old sku and quantity beside lines; a cancelled order of two lines names both', async () => {
    // Proves old consumers of one-line events still read what they read, and that every event type
    // (not only ORDER_PAID) carries every line.
    await createSku(s, { sku: 'le2a', name: 'Pen', price: 150, stock: 10 });
    await createSku(s, { sku: 'le2b', name: 'Ink', price: 700, stock: 10 });
    const one = await walletPaid('le2-one', { sku: 'le2a', quantity: 4 });
    expect((await events(one))[0]?.payload).toMatchObject({
      sku: 'le2a',
      quantity: 4,
      amount: 600,
      lines: [{ sku: 'le2a', name: 'Pen', quantity: 4, unit_price: 150 }],
    });
    const buyer = await s.token(TENANT, 'le2-two');
    const two = await placeOrder(s, buyer, 'le2-two', { lines: [{ sku: 'le2b' }, { sku: 'le2a', quantity: 2 }] });
    expect(two.status).toBe(201);
    const cancelled = await s.call('POST', `/v1/orders/${two.body.order_id}/cancel`, { token: buyer });
    expect(cancelled.status, cancelled.text).toBe(200);
    const [event] = await events(two.body.order_id);
    expect(event?.event_type).toBe('ORDER_CANCELLED');
    expect(event?.payload.sku).toBeUndefined();
    expect(event?.payload.lines).toEqual([
      { sku: 'le2a', name: 'Pen', quantity: 2, unit_price: 150 },
      { sku: 'le2b', name: 'Ink', quantity: 1, unit_price: 700 },
    ]);
    const outcomes = await s.call('GET', '/v1/admin/skus/le2b/outcomes', { token: admin });
    expect(outcomes.body.statuses).toEqual({ CANCELLED: 1 });
  });

  it('LE-03 the consumer refuses an event whose lines are malformed (400 VALIDATION), and nothing is shipped', async () => {
    // Proves the documented event schema is the one the webhook validates with.
    const body = JSON.stringify({
      event_id: 'le3-1',
      order_id: 'le3-order',
      event_type: 'ORDER_PAID',
      order_version: 2,
      payload: { lines: [{ sku: 'x', quantity: 0 }] },
    });
    const answer = await s.call('POST', '/v1/fulfillment/events', {
      rawBody: body,
      headers: { [SIGNATURE_HEADER]: signPayload(TEST_EVENTS_SECRET, body) },
    });
    expect([answer.status, answer.body?.code]).toEqual([400, 'VALIDATION']);
    expect((await s.call('GET', '/v1/admin/fulfillment/le3-order', { token: admin })).status).toBe(404);
  });
});
