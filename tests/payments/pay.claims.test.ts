import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';
import { keyedDeps } from '../../src/app.deps.ts';
import { executeKeyedWith, requestDigest, type KeyedOperation } from '../../src/idempotency/index.ts';
import { abandonedPay, beginPay } from '../../src/payments/pay.service.ts';
import { groupPayClaims, type PayClaims } from '../../src/payments/pay.claims.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';

// Group commit of the pays' first transactions (src/payments/pay.claims.ts): pays that start while
// a claim group commits share the next one (each key row, each CREATED → PAYING, one commit); each
// is still charged once and answered its own outcome, every key replays, and a member that fails
// (an order that is not the buyer's, a reused key) rolls the group back: each then claims alone.
// The route's wiring (concurrent provider pays over HTTP) is PG-01 in pay.group.test.ts.

describe('paying: concurrent pays share their PAYING commit', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    // Twelve charges at once on a shared test machine: the provider's answer must not pass the
    // pay timeout (an UNKNOWN here would be the machine's load, not the grouping).
    s = await startPaymentStack({ config: { payTimeoutMs: 5_000 } });
  });
  afterAll(async () => s.close());

  const buyers = async (sku: string, n: number, stock = n) => {
    await createSku(s, { sku, stock });
    return Promise.all(Array.from({ length: n }, (_, i) => s.buy(`${sku}-u${i}`, sku)));
  };
  /** Distinct transactions that wrote the orders' CREATED → PAYING rows (one group: one). */
  const payingWriters = async (orderIds: string[]) =>
    (
      await s.db.pool.query<{ n: number }>(
        `SELECT count(DISTINCT xmin::text)::int AS n FROM order_transitions
         WHERE order_id = ANY($1::text[]) AND to_status = 'PAYING'`,
        [orderIds],
      )
    ).rows[0]?.n;
  /** A provider pay exactly as the route makes it, its claim through `claims`. */
  const pay = (claims: PayClaims, userId: string, orderId: string, key: string) => {
    const principal = { tenantId: TENANT, userId, scope: 'buyer' as const };
    const payments = paymentDeps(s.deps);
    const op: KeyedOperation = {
      scope: { tenantId: TENANT, userId, operation: 'pay_order', key },
      digest: requestDigest('pay_order', { id: orderId }, {}),
      start: (tx) => beginPay(payments, tx, principal, orderId),
      abandoned: (tx) => abandonedPay(tx, orderId),
    };
    return executeKeyedWith(keyedDeps(s.deps), op, (o) => claims.claim({ principal, orderId }, o));
  };

  it('PC-01 pays that arrive while a claim commits share the next one: each charged once, each PAID, every key replays', async () => {
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const orders = await buyers('pc1', 12);
    // The first pay finds no group committing and goes alone; the eleven that arrive meanwhile wait
    // for it (up to the window) and go as one group.
    const claims = groupPayClaims(keyedDeps(s.deps), paymentDeps(s.deps), { windowMs: 1_000 });
    const payAll = () =>
      Promise.all(orders.map((o) => pay(claims, `pc1-u${orders.indexOf(o)}`, o.orderId, `${o.key}/pay`)));
    const paid = await payAll();
    paid.forEach((answer, i) => {
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ order_id: orders[i]!.orderId, status: 'PAID' });
    });
    // Before, each pay's claim was a transaction of its own: 11 writers for the 11 that waited.
    expect(await payingWriters(orders.slice(1).map((o) => o.orderId))).toBe(1);
    for (const o of orders) expect(await s.chargeRequests(o.orderId)).toBe(1);
    const replays = await payAll();
    replays.forEach((replay, i) => {
      expect(replay.replayed).toBe(true);
      expect(replay.body).toBe(paid[i]!.body);
    });
    for (const o of orders) expect(await s.chargeRequests(o.orderId)).toBe(1);
    // Over HTTP too, a key claimed in a group replays its first answer byte for byte.
    const http = await s.pay(orders[3]!.token, orders[3]!.orderId, `${orders[3]!.key}/pay`);
    expect([http.text, http.headers.get('idempotent-replayed')]).toEqual([paid[3]!.body, 'true']);
    const ids = orders.map((o) => o.orderId);
    expect(await countRows(s.db, 'outbox', "order_id = ANY($1::text[]) AND event_type = 'ORDER_PAID'", [ids])).toBe(12);
    expect(await skuCounters(s, 'pc1')).toMatchObject({ available: 0, held: 0, confirmed: 12 });
  });

  it('PC-02 a failing member (not the buyer’s order, a reused key) does not fail the others: each claims alone', async () => {
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const orders = await buyers('pc2', 6, 7);
    const [first, stranger, reuser, ...rest] = orders;
    // A key this buyer already used for another request: the pay must be refused, nothing charged.
    const other = await s.buy('pc2-u2', 'pc2');
    const reusedKey = `${reuser!.key}/pay-reused`;
    expect((await s.pay(reuser!.token, other.orderId, reusedKey)).body.status).toBe('PAID');
    const claims = groupPayClaims(keyedDeps(s.deps), paymentDeps(s.deps), { windowMs: 1_000 });
    const answers = await Promise.allSettled([
      pay(claims, 'pc2-u0', first!.orderId, `${first!.key}/pay`),
      // Another buyer's order: not found, as alone; and it must not fail the group's others.
      pay(claims, 'pc2-u1', rest[0]!.orderId, `${stranger!.key}/pay-theirs`),
      pay(claims, 'pc2-u2', reuser!.orderId, reusedKey),
      ...rest.map((o, i) => pay(claims, `pc2-u${i + 3}`, o.orderId, `${o.key}/pay`)),
    ]);
    const [firstAnswer, strangerAnswer, reusedAnswer, ...restAnswers] = answers;
    expect(firstAnswer).toMatchObject({ status: 'fulfilled', value: { status: 200 } });
    expect(strangerAnswer).toMatchObject({ status: 'rejected', reason: { code: 'ORDER_NOT_FOUND' } });
    expect(reusedAnswer).toMatchObject({ status: 'rejected', reason: { code: 'IDEMPOTENCY_KEY_REUSED' } });
    restAnswers.forEach((a, i) => {
      expect(a.status).toBe('fulfilled');
      if (a.status === 'fulfilled')
        expect(JSON.parse(a.value.body)).toEqual({ order_id: rest[i]!.orderId, status: 'PAID' });
    });
    // The refused pays left no key and moved no order; the reuser's order is still unpaid.
    expect(await countRows(s.db, 'idempotency_keys', 'idempotency_key = $1', [`${stranger!.key}/pay-theirs`])).toBe(0);
    expect((await s.order(reuser!.orderId)).status).toBe('CREATED');
    expect(await s.chargeRequests(reuser!.orderId)).toBe(0);
    for (const o of [first!, ...rest]) expect(await s.chargeRequests(o.orderId)).toBe(1);
    // The group rolled back: its members claimed alone, one commit each.
    expect(await payingWriters(rest.map((o) => o.orderId))).toBe(rest.length);
  });
});
