import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ORDER_AMOUNT_MINOR } from '../../src/platform/money.ts';
import { stockPumpFor } from '../../src/orders/queued/pump.ts';
import { countRows } from '../support/stack.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

// Issue 38, item 6: an order's total was summed in floating point and only bounded by 2^53, so an
// order of 9 × 10^15 minor units was created (201) that the provider refuses (more than 10^12 per
// charge): it could never be paid. Totals are now exact (bigint) and refused at create past the
// provider's limit with 400 AMOUNT_TOO_LARGE; the database holds the same bound.

const TOP = MAX_ORDER_AMOUNT_MINOR;

describe('order amounts within the provider’s limit (issue 38)', () => {
  let s: PaymentStack;
  let skuNo = 0;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { rateLimitPerMinute: 0 } });
  });
  afterAll(async () => s.close());

  const order = (token: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
    s.call('POST', '/v1/orders', { token, body, headers: { 'idempotency-key': key, ...headers } });
  const counters = async (skus: string[]) =>
    (await s.db.pool.query('SELECT sku, available FROM skus WHERE sku = ANY($1) ORDER BY sku', [skus])).rows;

  it('AM-01 the limit is exact: a total of 10^12 is taken and paid; one minor unit more is 400 AMOUNT_TOO_LARGE on every create path, holding nothing', async () => {
    // Proves the boundary on the batched one-line path, the keyed path of several lines and the
    // queued path (alone and in a group), and that a refusal leaves no order, key or held unit.
    await createSku(s, { sku: 'am-top', price: TOP, stock: 10 });
    await createSku(s, { sku: 'am-half', price: TOP / 2, stock: 10 });
    await createSku(s, { sku: 'am-one', price: 1, stock: 10 });
    const buyer = await s.token(TENANT, 'am1');
    const before = await counters(['am-half', 'am-one', 'am-top']);
    const refused = [
      await order(buyer, 'am1-q2', { sku: 'am-top', quantity: 2 }),
      await order(buyer, 'am1-lines', { lines: [{ sku: 'am-top' }, { sku: 'am-one' }] }),
      await order(
        buyer,
        'am1-async',
        { lines: [{ sku: 'am-half', quantity: 2 }, { sku: 'am-one' }] },
        { prefer: 'respond-async' },
      ),
      await order(buyer, 'am1-async-one', { sku: 'am-top', quantity: 3 }, { prefer: 'respond-async' }),
    ];
    for (const reply of refused)
      expect([reply.status, reply.body.code, reply.body.field, reply.body.maximum]).toEqual([
        400,
        'AMOUNT_TOO_LARGE',
        'body.lines',
        TOP,
      ]);
    expect(refused[1]?.body.amount).toBe(String(TOP + 1));
    expect(await countRows(s.db, 'orders', "user_id = 'am1'")).toBe(0);
    expect(await countRows(s.db, 'idempotency_keys', "user_id = 'am1'")).toBe(0);
    expect(await counters(['am-half', 'am-one', 'am-top'])).toEqual(before);
    // Exactly the limit: created, and the provider takes it.
    const fits = await order(buyer, 'am1-fits', { lines: [{ sku: 'am-half', quantity: 2 }] });
    expect([fits.status, fits.body.amount]).toEqual([201, TOP]);
    const paid = await s.pay(buyer, fits.body.order_id as string);
    expect([paid.status, paid.body.status], paid.text).toEqual([200, 'PAID']);
    expect((await s.statement()).net).toBe(TOP);
  });

  it('AM-02 the database refuses an order amount past the limit, whatever writes it; its bound is the constant', async () => {
    // Proves the CHECK of migration 152 and that it says the same number as src/platform/money.ts.
    const def = await s.db.pool.query<{ def: string }>(
      "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'orders_amount_within_provider_limit'",
    );
    expect(def.rows[0]?.def).toContain(`(amount <= '${TOP}'::bigint)`);
    const buyer = await s.token(TENANT, 'am2');
    await createSku(s, { sku: 'am2', price: 5, stock: 2 });
    const created = await order(buyer, 'am2', { sku: 'am2' });
    await expect(
      s.db.pool.query('UPDATE orders SET amount = $2 WHERE order_id = $1', [created.body.order_id, TOP + 1]),
    ).rejects.toThrow(/orders_amount_within_provider_limit/);
  });

  it('AM-P1 over prices, quantities and line counts: every 201 and 202 amount is the exact sum of its lines, every refusal is a total past the limit, and every such order can be paid (queued ones once reserved)', async () => {
    // Proves the property end to end: the answer, the order's lines and what the provider charged agree.
    const price = fc.oneof(
      { arbitrary: fc.integer({ min: 1, max: 1_000 }), weight: 3 },
      fc.integer({ min: 1, max: 1_000_000_000 }),
      fc.integer({ min: 1, max: TOP }),
      fc.constantFrom(TOP, TOP - 1, Math.floor(TOP / 3), 333_333_333_333),
    );
    const line = fc.record({
      price,
      quantity: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 1_000 })),
    });
    let run = 0;
    const seen = { paid: 0, queued: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 20 }), fc.boolean(), async (lines, queued) => {
        run++;
        const skus: string[] = [];
        for (const l of lines) {
          const sku = `amp-${++skuNo}`;
          skus.push(sku);
          await createSku(s, { sku, price: l.price, stock: 1_000 });
        }
        const buyer = await s.token(TENANT, `amp-${run}`);
        const body =
          lines.length === 1 && !queued
            ? { sku: skus[0], quantity: lines[0]!.quantity }
            : { lines: lines.map((l, i) => ({ sku: skus[i], quantity: l.quantity })) };
        const total = lines.reduce((sum, l) => sum + BigInt(l.price) * BigInt(l.quantity), 0n);
        const reply = await order(buyer, `amp-${run}`, body, queued ? { prefer: 'respond-async' } : {});
        if (total > BigInt(TOP)) {
          expect([reply.status, reply.body.code, reply.body.amount]).toEqual([400, 'AMOUNT_TOO_LARGE', String(total)]);
          seen.refused++;
          return;
        }
        expect([queued ? 202 : 201, reply.body.amount], reply.text).toEqual([reply.status, Number(total)]);
        const orderId = reply.body.order_id as string;
        const rows = await s.db.pool.query<{ amount: number; sum: number }>(
          'SELECT o.amount, (SELECT sum(l.amount) FROM order_lines l WHERE l.order_id = o.order_id)::bigint AS sum FROM orders o WHERE o.order_id = $1',
          [orderId],
        );
        expect(rows.rows[0]).toEqual({ amount: Number(total), sum: Number(total) });
        // A queued order can be paid once the stock service has reserved it: drain the pump, then pay.
        if (queued) {
          await stockPumpFor(s.deps).drain();
          const view = await s.call('GET', `/v1/orders/${orderId}`, { token: buyer });
          expect([view.body.status, view.body.amount], view.text).toEqual(['CREATED', Number(total)]);
          seen.queued++;
        }
        const paid = await s.pay(buyer, orderId);
        expect([paid.status, paid.body.status], paid.text).toEqual([200, 'PAID']);
        const charged = (await s.statement()).lines.filter((l) => l.merchant_order === orderId);
        expect(charged.map((l) => [l.type, l.amount])).toEqual([['CHARGE', Number(total)]]);
        seen.paid++;
      }),
      { numRuns: 60, seed: 38 },
    );
    // The runs met every outcome, not only refusals.
    expect(seen.paid).toBeGreaterThanOrEqual(15);
    expect(seen.queued).toBeGreaterThanOrEqual(5);
    expect(seen.refused).toBeGreaterThanOrEqual(5);
  }, 240_000);
});
