import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CrashTarget } from '../support/crash-drivers.ts';
import { invariants } from '../support/crash-invariants.ts';
import { createSku, TENANT } from '../support/payments.ts';
import { plantLedgerLine, startLedgerPaymentStack, type LedgerPaymentStack } from '../support/plant.ts';
import { drain } from '../reconcile/scenario.ts';

// The control of the crash matrix's checker (issue 55): on a real database and a real channel, a
// clean sale is judged clean (CI-01), and each kind of damage the matrix looks for, planted by
// hand, is named by exactly the message that says what it is (CI-02..05). Without this, a checker
// that stopped seeing a second charge or a second shipment would pass every crash point.
const SKU = 'ci';
const PRICE = 1990;

describe('the crash matrix checker names the damage it exists to find', () => {
  let s: LedgerPaymentStack;
  let t: CrashTarget;
  const orders: string[] = [];

  beforeAll(async () => {
    // The channel's ledger in PostgreSQL, so a second CHARGE line can be written into its books.
    s = await startLedgerPaymentStack();
    await createSku(s, { sku: SKU, price: PRICE, stock: 10 });
    for (let i = 0; i < 4; i++) {
      const bought = await s.buy(`ci-buyer-${i}`, SKU);
      expect((await s.pay(bought.token, bought.orderId)).body.status).toBe('PAID');
      orders.push(bought.orderId);
    }
    // Events delivered to the built-in consumer: every PAID order is shipped once.
    await drain(s);
    t = {
      api: s.url,
      channel: s.channel.url,
      token: (user, scope = 'buyer') => s.token(TENANT, user, scope),
      sql: async <T extends Record<string, unknown>>(text: string, params: unknown[] = []) =>
        (await s.db.pool.query(text, params)).rows as T[],
    };
    const shipped = await t.sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM fulfillment WHERE order_id = ANY($1) AND ship_count = 1',
      [orders],
    );
    expect(shipped).toEqual([{ n: orders.length }]);
  });
  afterAll(async () => {
    await s?.close();
  });

  const order = (i: number) => {
    const id = orders[i];
    if (!id) throw new Error(`no order ${i}`);
    return id;
  };

  it('CI-01 a clean sale: the checker names nothing', async () => {
    expect(await invariants(t, orders)).toEqual([]);
  });

  it('CI-02 a second CHARGE in the channel’s ledger for a PAID order is named', async () => {
    // The channel's HTTP rules never charge one merchant order twice: the line is written straight in.
    await plantLedgerLine(s.ledger, 'CHARGE', order(0), PRICE);
    expect(await invariants(t, [order(0)])).toEqual([`${order(0)}: 2 charges, 0 refunds`, `${order(0)}: PAID, 2/0`]);
  });

  it('CI-03 a duplicate ORDER_PAID outbox row is named', async () => {
    await s.db.pool.query(
      `INSERT INTO outbox (order_id, event_type, order_version, payload, created_at, next_attempt_at, published_at)
       SELECT order_id, event_type, order_version + 100, payload, created_at, next_attempt_at, published_at
         FROM outbox WHERE order_id = $1 AND event_type = 'ORDER_PAID'`,
      [order(1)],
    );
    expect(await invariants(t, [order(1)])).toEqual([`${order(1)}: 2 ORDER_PAID events`]);
  });

  it('CI-04 a second shipment is named', async () => {
    await s.db.pool.query('UPDATE fulfillment SET ship_count = 2 WHERE order_id = $1', [order(2)]);
    expect(await invariants(t, [order(2)])).toEqual([`${order(2)}: shipped twice`]);
  });

  it('CI-05 a counter drift (a unit held on the SKU row with no reservation behind it) is named', async () => {
    // `total = available + held` still holds on the row (its CHECK); the held count no longer
    // matches the reservations, which is what the checker compares.
    await s.db.pool.query('UPDATE skus SET available = available - 1, held = held + 1 WHERE sku = $1', [SKU]);
    expect(await invariants(t, [order(3)])).toEqual([`${SKU}: counters not conserved`]);
  });
});
