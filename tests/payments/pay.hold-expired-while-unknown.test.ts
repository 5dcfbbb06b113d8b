import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skuCounters } from '../support/fixtures.ts';
import { countRows } from '../support/stack.ts';
import {
  createSku,
  eventually,
  startPaymentStack,
  type PaymentStack,
  unknownOrder as lostPay,
} from '../support/payments.ts';
import { LOST_REPLY_TIMEOUT_MS, providersUnderTest } from '../support/providers/index.ts';

type Held = Array<{ id: string; notify_id: string; merchant_order: string; kind: string }>;

describe.each(providersUnderTest())('reservations that expire while the payment is unknown [%s]', (provider) => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ provider, config: { payTimeoutMs: LOST_REPLY_TIMEOUT_MS } });
  });
  afterAll(async () => s.close());

  const unknownOrder = async (user: string, sku: string) => {
    return lostPay(s, user, sku);
  };

  it('C29-07 one late success re-reserves (/r2), the other refunds once though its first refund reply is lost', async () => {
    // Proves both compensations: forward (re-reserve and confirm) and backward (refund with a fixed key).
    await createSku(s, { sku: 'e7', stock: 2, hold_ttl_ms: 1000 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const a = await unknownOrder('a', 'e7');
    const b = await unknownOrder('b', 'e7');
    s.clock.advance(2000);
    expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(2);
    await s.buy('c', 'e7'); // a third buyer takes one of the two units
    await s.control('POST', '/_control/faults', {
      op: 'refund',
      kind: 'DELAY_RESPONSE',
      merchant_order: b.orderId,
      ms: 800,
    });
    const held = (await s.control('GET', '/_control/callbacks/held')) as Held;
    const ids = [a.orderId, b.orderId].map(
      (id) => held.find((h) => h.merchant_order === id && h.kind === 'CHARGED')?.id,
    );
    await s.control('POST', '/_control/callbacks/release', { ids });

    const va = await eventually(
      () => s.order(a.orderId),
      (v) => v.notifications.length === 1,
    );
    expect(va.notifications[0]?.effect).toBe('PAID_REHELD');
    expect([va.status, va.reservation.key, va.reservation.status]).toEqual(['PAID', `${a.orderId}/r2`, 'CONFIRMED']);
    expect(va.timeline.at(-1)?.reason).toMatch(/re-reserved .*\/r2$/);
    const vb = await eventually(
      () => s.order(b.orderId),
      (v) => v.notifications.length === 1,
    );
    expect(vb.notifications[0]?.effect).toBe('REFUNDING');
    expect(vb.status).toBe('REFUNDING'); // the refund reply was lost: the provider did refund
    expect(vb.timeline.at(-1)?.reason).toMatch(/stock lost \(SOLD_OUT\)/);

    const recovered = await s.recover();
    expect(recovered.body.resolved).toMatchObject({ REFUNDED: 1 });
    expect((await s.order(b.orderId)).status).toBe('REFUNDED');
    const refunds = (await s.statement()).lines.filter((l) => l.type === 'REFUND');
    expect(refunds.map((l) => [l.merchant_order, l.amount])).toEqual([[b.orderId, 1990]]);

    // Later messages change nothing: the provider's REFUNDED notification and a forged late CHARGED.
    const refundedNote = await eventually(
      async () =>
        ((await s.control('GET', '/_control/callbacks/held')) as Held).filter(
          (h) => h.merchant_order === b.orderId && h.kind === 'REFUNDED',
        ),
      (h) => h.length === 1,
    );
    await s.control('POST', '/_control/callbacks/release', { ids: [refundedNote[0]?.id] });
    await s.control('POST', '/_control/callbacks/send', { merchant_order: b.orderId, kind: 'CHARGED', amount: 1990 });
    await s.control('POST', '/_control/callbacks/release', {
      ids: ((await s.control('GET', '/_control/callbacks/held')) as Held)
        .filter((h) => h.merchant_order === b.orderId)
        .map((h) => h.id),
    });
    const final = await eventually(
      () => s.order(b.orderId),
      (v) => v.notifications.length === 3,
    );
    expect(final.notifications.slice(1).map((n) => [n.kind, n.effect])).toEqual([
      ['REFUNDED', 'IGNORED'],
      ['CHARGED', 'DUPLICATE'],
    ]);
    expect(final.status).toBe('REFUNDED');
    expect(await skuCounters(s, 'e7')).toMatchObject({ total: 2, available: 0, held: 1, confirmed: 1 });
  });

  it('C29-08 20 expired UNKNOWN orders, 20 callbacks, 2 sweeps and 10 new buyers at once: PAID ≤ stock, every charge accounted for', async () => {
    // Proves no interleaving of late successes, sweeps and new buyers oversells or loses money.
    await createSku(s, { sku: 'e8', stock: 20, hold_ttl_ms: 1000 });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const originals = await Promise.all(Array.from({ length: 20 }, (_, i) => unknownOrder(`o${i}`, 'e8')));
    s.clock.advance(2000);
    // Each charge's txn from the provider's ledger (its statement line's ref), whatever the provider.
    const charges = (await s.statement()).lines.filter((l) => l.type === 'CHARGE');
    const txns = new Map(charges.map((l) => [l.merchant_order, l.ref]));
    await Promise.all([
      ...originals.map((o) =>
        s.notifyAs({
          notify_id: `ntf-${o.orderId}`,
          merchant_order: o.orderId,
          kind: 'CHARGED',
          amount: 1990,
          txn: txns.get(o.orderId),
        }),
      ),
      s.call('POST', '/v1/admin/expiry/run', { token: s.admin }),
      s.call('POST', '/v1/admin/expiry/run', { token: s.admin }),
      ...Array.from({ length: 10 }, async (_, i) => {
        // SOLD_OUT is a fine answer here, and only that: a 500 or any other refusal fails (issue 55).
        const fresh = await s.buy(`new${i}`, 'e8').catch((error: Error) => {
          if (!/^buy failed: 409 .*"SOLD_OUT"/.test(error.message)) throw error;
          return undefined;
        });
        if (fresh) expect((await s.pay(fresh.token, fresh.orderId)).status).toBe(200);
      }),
    ]);
    await eventually(
      async () => (await s.recover()).body.pending as number,
      (pending) => pending === 0,
      10_000,
    );

    const rows = await s.db.pool.query<{ order_id: string; status: string }>(
      `SELECT order_id, status FROM orders WHERE sku = 'e8'`,
    );
    const paid = rows.rows.filter((r) => r.status === 'PAID').map((r) => r.order_id);
    expect(paid.length).toBeLessThanOrEqual(20);
    const counters = await skuCounters(s, 'e8');
    expect(counters.confirmed).toBe(paid.length);
    expect(counters.available + counters.held + counters.confirmed).toBe(20);
    const lines = (await s.statement()).lines.filter((l) => rows.rows.some((r) => r.order_id === l.merchant_order));
    for (const line of lines.filter((l) => l.type === 'CHARGE')) {
      const status = rows.rows.find((r) => r.order_id === line.merchant_order)?.status;
      const refunds = lines.filter((l) => l.type === 'REFUND' && l.merchant_order === line.merchant_order).length;
      expect(status === 'PAID' ? refunds : refunds - 1).toBe(0);
      if (status !== 'PAID') expect(status).toBe('REFUNDED');
    }
    const net = lines.reduce((sum, l) => sum + (l.type === 'CHARGE' ? l.amount : -l.amount), 0);
    expect(net).toBe(paid.length * 1990);
    expect(await countRows(s.db, 'outbox', "event_type = 'ORDER_PAID' AND order_id = ANY($1)", [paid])).toBe(
      paid.length,
    );
  });
});
