import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { groupPayCommits } from '../../src/payments/pay.group.ts';
import { answerEvent } from '../../src/payments/answers.ts';
import { handleNotification } from '../../src/payments/notifications.ts';

// The provider's notifications join the pays' group commit (src/payments/notifications.ts): a
// notification and its pay's answer, which arrive together, never share a group (one event per
// order), and concurrent notifications share one transaction instead of one durable commit each.

describe('paying: notifications in the pays group commit', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
  });
  afterAll(async () => s.close());

  /** Orders left PAYING (UNKNOWN to the buyer): the provider charged them after the pay's timeout. */
  const unknownOrders = async (sku: string, n: number) => {
    await createSku(s, { sku, stock: n });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const orders = await Promise.all(Array.from({ length: n }, (_, i) => s.buy(`${sku}-u${i}`, sku)));
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', ms: 500, times: n });
    const answers = await Promise.all(orders.map((o) => s.pay(o.token, o.orderId, `${o.key}/pay`)));
    expect(answers.map((a) => a.body.status)).toEqual(Array(n).fill('UNKNOWN'));
    return orders;
  };
  /** The provider's CHARGED notification of an order, `i`-th of its run. */
  const charged = (run: string, o: { orderId: string }, i: number) => ({
    provider: 'fake' as const,
    notifyId: `${run}-${i}`,
    merchantOrder: o.orderId,
    kind: 'CHARGED' as const,
    amount: 1990,
    txn: `t-${run}-${i}`,
  });
  const writers = async (table: string, column: string, ids: string[]) =>
    (
      await s.db.pool.query<{ n: number }>(
        `SELECT count(DISTINCT xmin::text)::int AS n FROM ${table} WHERE ${column} = ANY($1::text[])`,
        [ids],
      )
    ).rows[0]?.n;

  it('PN-01 a pay answer and a notification of one order wait for separate groups; the other orders of the group share it', async () => {
    const [x, y] = await unknownOrders('pn1', 2);
    const commits = groupPayCommits(paymentDeps(s.deps), { concurrent: 0, windowMs: 20 });
    const none = async () => {};
    const applied = await Promise.all([
      commits.record({ orderId: x!.orderId, answer: answerEvent('charge', 'CHARGED', 'charge', 1990), complete: none }),
      commits.record({ orderId: y!.orderId, answer: answerEvent('charge', 'CHARGED', 'charge', 1990), complete: none }),
      commits.record({ orderId: x!.orderId, answer: answerEvent('callback', 'CHARGED', 'cb', 1990), complete: none }),
    ]);
    // One event per order per group: x's notification came second, found x PAID, changed nothing.
    expect(applied.map((a) => a.outcome)).toEqual(['PAID', 'PAID', 'DUPLICATE']);
    // Without the split, the group fails its one-event-per-order check and every member commits alone.
    expect(await writers('orders', 'order_id', [x!.orderId, y!.orderId])).toBe(1);
    expect(
      await countRows(s.db, 'outbox', "order_id = ANY($1::text[]) AND event_type = 'ORDER_PAID'", [
        [x!.orderId, y!.orderId],
      ]),
    ).toBe(2);
    expect(await skuCounters(s, 'pn1')).toMatchObject({ available: 0, held: 0, confirmed: 2 });
  });

  it('PN-02 notifications that arrive together share one group commit: each recorded once, each order PAID once', async () => {
    const orders = await unknownOrders('pn2', 8);
    // The route's handler with a group that collects for its window before the first commit (each
    // notification reads its replay record first: under load they can arrive 50 ms apart and more).
    const deps = paymentDeps(s.deps);
    const grouped = { ...deps, payCommits: groupPayCommits(deps, { concurrent: 0, windowMs: 500 }) };
    const results = await Promise.all(orders.map((o, i) => handleNotification(grouped, charged('pn2', o, i))));
    expect(results).toEqual(Array(8).fill({ effect: 'PAID' }));
    const ids = orders.map((o) => o.orderId);
    for (const id of ids) expect((await s.order(id)).status).toBe('PAID');
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = ANY($1::text[])', [ids])).toBe(8);
    expect(await countRows(s.db, 'outbox', "order_id = ANY($1::text[]) AND event_type = 'ORDER_PAID'", [ids])).toBe(8);
    // Before, each notification was a transaction of its own: 8 writers.
    expect(await writers('payment_notifications', 'merchant_order', ids)).toBe(1);
    // A copy over HTTP replays its first effect and adds nothing.
    const copy = await s.notify({
      notify_id: 'pn2-1',
      merchant_order: ids[1],
      kind: 'CHARGED',
      amount: 1990,
      txn: 't-pn2-1',
    });
    expect(copy.body).toEqual({ effect: 'DUPLICATE', recorded_effect: 'PAID' });
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = ANY($1::text[])', [ids])).toBe(8);
  });
  it("PN-03 overlapping groups: each order's answer and two copies of its notification, all at once: PAID once, each notification recorded once, the copy replays it", async () => {
    const orders = await unknownOrders('pn3', 12);
    const deps = paymentDeps(s.deps);
    // Up to four groups commit at once and a timer sends the next while they do: the answer and
    // the copies of one order are kept out of each other's groups (they would wait on its row lock).
    const grouped = { ...deps, payCommits: groupPayCommits(deps, { concurrent: 4, windowMs: 1, max: 4 }) };
    const none = async () => {};
    const answer = answerEvent('charge', 'CHARGED', 'charge', 1990);
    const work = orders.flatMap((o, i) => [
      grouped.payCommits.record({ orderId: o.orderId, answer, complete: none }).then((a) => a.outcome),
      handleNotification(grouped, charged('pn3', o, i)),
      handleNotification(grouped, charged('pn3', o, i)),
    ]);
    const results = await Promise.all(work);
    const ids = orders.map((o) => o.orderId);
    for (const [i, id] of ids.entries()) {
      expect((await s.order(id)).status).toBe('PAID');
      type Copy = { effect: string; recorded_effect?: string };
      const [answer, first, second] = results.slice(3 * i, 3 * i + 3) as [string, Copy, Copy];
      // Whichever came first made the order PAID; the later copy replays the earlier one's record.
      expect([answer, first.effect, second.effect].filter((e) => e === 'PAID')).toHaveLength(1);
      const [recorded, replayed] = first.recorded_effect === undefined ? [first, second] : [second, first];
      expect(recorded.recorded_effect).toBeUndefined();
      expect(replayed).toEqual({ effect: 'DUPLICATE', recorded_effect: recorded.effect });
    }
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = ANY($1::text[])', [ids])).toBe(12);
    expect(await countRows(s.db, 'outbox', "order_id = ANY($1::text[]) AND event_type = 'ORDER_PAID'", [ids])).toBe(12);
    expect(await countRows(s.db, 'order_transitions', "order_id = ANY($1::text[]) AND to_status = 'PAID'", [ids])).toBe(
      12,
    );
    expect(await skuCounters(s, 'pn3')).toMatchObject({ available: 0, held: 0, confirmed: 12 });
  });
  it('PN-04 copies of recorded notifications are answered from their records, never applied again: no attention raised again, no row; the new notification beside them commits', async () => {
    const [a, b, c] = await unknownOrders('pn4', 3);
    const deps = paymentDeps(s.deps);
    const grouped = { ...deps, payCommits: groupPayCommits(deps, { concurrent: 0, windowMs: 50 }) };
    expect(await handleNotification(grouped, charged('pn4', a!, 0))).toEqual({ effect: 'PAID' });
    // A DECLINED for a PAID order changes nothing and asks a person to look (attention).
    const refunded = { ...charged('pn4', a!, 1), kind: 'DECLINED' as const };
    expect(await handleNotification(grouped, refunded)).toEqual({ effect: 'IGNORED' });
    expect((await s.order(a!.orderId)).attention).toMatch(/declined for a PAID order/);
    // The person looked and cleared it. Copies of both arrive, with b's first notification.
    await s.db.pool.query('UPDATE orders SET attention = NULL WHERE order_id = $1', [a!.orderId]);
    const version = (await s.order(a!.orderId)).version;
    const answers = await Promise.all([
      handleNotification(grouped, refunded),
      handleNotification(grouped, charged('pn4', b!, 2)),
    ]);
    expect(answers).toEqual([{ effect: 'DUPLICATE', recorded_effect: 'IGNORED' }, { effect: 'PAID' }]);
    expect(await handleNotification(grouped, charged('pn4', a!, 0))).toEqual({
      effect: 'DUPLICATE',
      recorded_effect: 'PAID',
    });
    const view = await s.order(a!.orderId);
    expect([view.status, view.version, view.attention]).toEqual(['PAID', version, null]);
    const ids = [a!, b!, c!].map((o) => o.orderId);
    expect(await countRows(s.db, 'payment_notifications', 'merchant_order = ANY($1::text[])', [ids])).toBe(3);
    expect(await countRows(s.db, 'order_transitions', "order_id = ANY($1::text[]) AND to_status = 'PAID'", [ids])).toBe(
      2,
    );
  });
});
