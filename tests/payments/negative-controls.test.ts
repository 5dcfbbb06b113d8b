import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyOrderEvent } from '../../src/orders/apply/one.ts';
import { answerEvent } from '../../src/payments/answers.ts';
import { inTx } from '../../src/platform/db.ts';
import { armMutation, type MutationName } from '../../src/platform/mutations.ts';
import { skuCounters } from '../support/fixtures.ts';
import { placeOrder } from '../support/fixtures.ts';
import {
  createSku,
  eventually,
  startPaymentStack,
  TENANT,
  unknownOrder,
  type PaymentStack,
} from '../support/payments.ts';
import { countRows } from '../support/stack.ts';

// Issue 55: each negative control switches off exactly one guard of the real code
// (src/platform/mutations.ts, armed only here, in this process) and runs the real flow: the pay
// route, recovery, the decider under applyOrderEvent. It shows the damage seed 000 names; the
// same flow with the guard in place is the contrast. A guard whose removal changed nothing would
// not be proven by its positive test.

// Pays that must come back PAID get a generous timeout on a loaded machine; a lost answer is later still.
const PAY_TIMEOUT_MS = 1_500;
const LOST_MS = PAY_TIMEOUT_MS + 500;
const PRICE = 1990;

describe('negative controls: each guard is what stops the damage', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: PAY_TIMEOUT_MS } });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  /** Runs `body` with the guard `name` removed (for `only`'s orders, else for all), and puts it back. */
  async function without<T>(name: MutationName, only: string[] | undefined, body: () => Promise<T>): Promise<T> {
    const disarm = armMutation(name, only);
    try {
      return await body();
    } finally {
      disarm();
    }
  }
  const lines = async (orderId: string, type?: string) =>
    (await s.statement()).lines.filter((l) => l.merchant_order === orderId && (type === undefined || l.type === type));
  const paidCount = async (sku: string) =>
    (
      await s.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders WHERE sku = $1 AND status = 'PAID'`, [
        sku,
      ])
    ).rows[0]?.n;
  const lostCharge = (orderId: string, kind = 'DELAY_RESPONSE', ms = LOST_MS) =>
    s.control('POST', '/_control/faults', { op: 'charge', kind, merchant_order: orderId, ms });
  // A request that lingers this long is still on its way when recovery queries after the pay's timeout.
  const LINGER_MS = LOST_MS + 3_000;

  it('C29-14 without UNKNOWN (orders.decide.lost-is-unknown): a lost charge reply FAILS the order, its unit is sold again and the provider holds both payments', async () => {
    await createSku(s, { sku: 'x14', stock: 1 });
    const victim = await s.buy('v14', 'x14');
    await lostCharge(victim.orderId);
    const answered = await without('orders.decide.lost-is-unknown', [victim.orderId], () =>
      s.pay(victim.token, victim.orderId),
    );
    expect(answered.body.status).toBe('FAILED');
    const other = await s.buy('o14', 'x14'); // the released unit goes to somebody else
    expect((await s.pay(other.token, other.orderId)).body.status).toBe('PAID');
    expect((await s.order(victim.orderId)).status).toBe('FAILED');
    await eventually(
      () => lines(victim.orderId, 'CHARGE'),
      (l) => l.length === 1,
    ); // CHARGED_BUT_FAILED
    expect(await paidCount('x14')).toBe(1);
    const net = [...(await lines(victim.orderId)), ...(await lines(other.orderId))].reduce(
      (sum, l) => sum + l.amount,
      0,
    );
    expect(net).toBe(2 * PRICE); // channel_net 3980 != paid_sum 1990

    // Contrast, the guard in place: UNKNOWN, the unit stays HELD and nobody else can take it.
    await createSku(s, { sku: 'x14ok', stock: 1 });
    const real = await s.buy('r14', 'x14ok');
    await lostCharge(real.orderId);
    expect((await s.pay(real.token, real.orderId)).body.status).toBe('UNKNOWN');
    expect((await s.order(real.orderId)).reservation.status).toBe('HELD');
    const late = await s.call('POST', '/v1/orders', {
      token: other.token,
      body: { sku: 'x14ok' },
      headers: { 'idempotency-key': 'late-x14ok' },
    });
    expect([late.status, late.body.code]).toEqual([409, 'SOLD_OUT']);
  });

  it('C29-15 without close (orders.decide.not-found-closes): NOT_FOUND read as failure, and the lingering charge lands behind a FAILED order', async () => {
    await createSku(s, { sku: 'x15', stock: 2 });
    const o = await s.buy('v15', 'x15');
    await lostCharge(o.orderId, 'DELAY_REQUEST', LINGER_MS); // the request lingers in the channel: a query finds nothing yet
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    await without('orders.decide.not-found-closes', [o.orderId], () => s.recover(0));
    expect((await s.order(o.orderId)).status).toBe('FAILED');
    expect((await s.order(o.orderId)).reservation.status).toBe('RELEASED');
    await eventually(
      () => lines(o.orderId, 'CHARGE'),
      (l) => l.length === 1,
      LINGER_MS + 10_000,
    ); // CHARGED_BUT_FAILED: money taken for an order that says it was not paid

    // Contrast, the guard in place: recovery closes the charge first; the late request is refused.
    const real = await s.buy('r15', 'x15');
    await lostCharge(real.orderId, 'DELAY_REQUEST', LINGER_MS);
    expect((await s.pay(real.token, real.orderId)).body.status).toBe('UNKNOWN');
    await s.recover(0);
    const view = await s.order(real.orderId);
    expect(view.status).toBe('FAILED');
    expect(view.timeline.at(-1)?.reason).toMatch(/close/);
  });

  describe('the order lock and the prior-status guard of transition()', () => {
    // Two successes for one UNKNOWN order, both decided while a third connection holds the order's
    // reservation: with the order lock removed both read UNKNOWN before either writes. The order
    // lock is the first guard; the conditional UPDATE on the prior status is the one behind it.
    async function raceTwoSuccesses(
      sku: string,
    ): Promise<{ orderId: string; results: PromiseSettledResult<unknown>[] }> {
      await createSku(s, { sku, stock: 2 });
      const o = await unknownOrder(s, `u-${sku}`, sku, LOST_MS);
      const blocker = new pg.Client({ connectionString: s.db.url });
      await blocker.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('SELECT 1 FROM reservations WHERE request_key = $1 FOR UPDATE', [
          (await s.order(o.orderId)).reservation.key,
        ]);
        const success = (n: number) =>
          inTx(s.db.pool, (tx) =>
            applyOrderEvent(tx, o.orderId, answerEvent('callback', 'CHARGED', `callback n${n}`, PRICE), s.clock.now()),
          );
        const both = Promise.allSettled([success(1), success(2)]);
        // Both have read the order and wait on the reservation the blocker holds (lockReservations'
        // statement, in this file's database: the cluster is shared with other test files).
        await eventually(
          async () =>
            (
              await s.db.pool.query<{ n: number }>(
                `SELECT count(*)::int AS n FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'
                   AND query LIKE 'SELECT request_key, user_id, sku, quantity, status, expires_at FROM reservations %'`,
              )
            ).rows[0]?.n,
          (n) => n === 2,
          10_000,
        );
        await blocker.query('COMMIT');
        return { orderId: o.orderId, results: await both };
      } finally {
        await blocker.end();
      }
    }
    const transitionsToPaid = (orderId: string) =>
      countRows(s.db, 'order_transitions', `order_id = $1 AND to_status = 'PAID'`, [orderId]);
    const paidEvents = (orderId: string) =>
      countRows(s.db, 'outbox', `order_id = $1 AND event_type = 'ORDER_PAID'`, [orderId]);

    it('C29-16b with the order lock removed (orders.lock), the prior-status guard refuses the stale second success: one transition, one event, one unit', async () => {
      const { orderId, results } = await without('orders.lock', undefined, () => raceTwoSuccesses('x16b'));
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(String(refused.reason)).toMatch(/transition UNKNOWN -> PAID of .* matched no row/);
      expect((await s.order(orderId)).status).toBe('PAID');
      expect([await transitionsToPaid(orderId), await paidEvents(orderId)]).toEqual([1, 1]);
      expect(await skuCounters(s, 'x16b')).toMatchObject({ available: 1, confirmed: 1 });
    });

    it('C29-16 without the prior-status guard too (orders.transition.prior-status): the order changes twice from one UNKNOWN — PAID twice, two ORDER_PAID events, a second unit confirmed for a one-unit order', async () => {
      const { orderId, results } = await without('orders.lock', undefined, () =>
        without('orders.transition.prior-status', undefined, () => raceTwoSuccesses('x16')),
      );
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
      expect((await s.order(orderId)).status).toBe('PAID');
      expect([await transitionsToPaid(orderId), await paidEvents(orderId)]).toEqual([2, 2]);
      expect(await skuCounters(s, 'x16')).toMatchObject({ available: 0, confirmed: 2 }); // confirmed 2 != paid 1
    });
  });

  it('C29-17 without "PAID needs its units" (orders.decide.paid-needs-units): late successes oversell — PAID 9 for 5 units, four PAID over released units', async () => {
    await createSku(s, { sku: 'x17', stock: 5, hold_ttl_ms: 1000 });
    const late = await Promise.all(Array.from({ length: 5 }, (_, i) => unknownOrder(s, `v17-${i}`, 'x17', LOST_MS)));
    s.clock.advance(2000);
    expect((await s.call('POST', '/v1/admin/expiry/run', { token: s.admin })).body.released).toBe(5);
    for (let i = 0; i < 5; i++) {
      const fresh = await s.buy(`n17-${i}`, 'x17');
      expect((await s.pay(fresh.token, fresh.orderId)).body.status).toBe('PAID');
    }
    const ids = late.map((o) => o.orderId);
    await without('orders.decide.paid-needs-units', ids.slice(0, 4), () => s.recover(0));
    // Four with the guard removed, the fifth with it in place: sold out, so its money goes back.
    const statuses = await Promise.all(ids.map(async (id) => (await s.order(id)).status));
    expect(statuses.slice(0, 4)).toEqual(['PAID', 'PAID', 'PAID', 'PAID']);
    expect(['REFUNDING', 'REFUNDED']).toContain(statuses[4]);
    expect(await paidCount('x17')).toBe(9);
    expect((await skuCounters(s, 'x17')).confirmed).toBe(5); // confirmed 5 != paid 9: oversold by four
  });

  it('RK-01 without the fixed refund key (payments.refund.fixed-key): a refund re-sent after a lost reply is a second refund, stopped only by the provider refusing to refund a payment twice', async () => {
    // The double, like Stripe and Alipay, refuses a second full refund under another key
    // (ALREADY_REFUNDED), so the money goes back once either way; without the fixed key the
    // order converges only on that refusal, not on the provider recognising its own refund.
    await createSku(s, { sku: 'rk', stock: 2 });
    const refundWithLostReply = async (user: string) => {
      const o = await s.buy(user, 'rk');
      expect((await s.pay(o.token, o.orderId)).body.status).toBe('PAID');
      await s.control('POST', '/_control/faults', {
        op: 'refund',
        kind: 'DELAY_RESPONSE',
        merchant_order: o.orderId,
        ms: LOST_MS,
      });
      const refund = await s.call('POST', `/v1/admin/orders/${o.orderId}/refund`, {
        token: s.admin,
        headers: { 'idempotency-key': `rk-${user}` },
        body: { reason: 'negative control RK-01' },
      });
      expect(refund.status).toBe(200);
      expect((await s.order(o.orderId)).status).toBe('REFUNDING'); // the provider refunded; its answer was lost
      return o.orderId;
    };

    const broken = await refundWithLostReply('rk-broken');
    await without('payments.refund.fixed-key', [broken], () => s.recover(0));
    const view = await s.order(broken);
    expect([view.status, view.timeline.at(-1)?.reason]).toEqual([
      'REFUNDED',
      'refund reply: already refunded at the provider',
    ]);
    expect((await lines(broken, 'REFUND')).length).toBe(1);

    // Contrast, the guard in place: the re-send is the same refund, and the provider says so.
    const real = await refundWithLostReply('rk-real');
    await s.recover(0);
    const realView = await s.order(real);
    expect([realView.status, realView.timeline.at(-1)?.reason]).toEqual(['REFUNDED', 'refund reply']);
    expect((await lines(real, 'REFUND')).length).toBe(1);
  });
  it("IK-01 without the key's unique claim (idempotency.key.unique): a retried create with its key makes a second order and holds its units twice", async () => {
    await createSku(s, { sku: 'ik-a', stock: 10 });
    await createSku(s, { sku: 'ik-b', stock: 10 });
    const buyer = await s.token(TENANT, 'ik-user');
    // Two lines: one keyed transaction (keyedCreate → executeKeyed), the path of every keyed write.
    const create = (key: string) =>
      placeOrder(s, buyer, key, { lines: [{ sku: 'ik-a' }, { sku: 'ik-b', quantity: 2 }] });
    const broken = await without('idempotency.key.unique', ['ik-broken'], async () => [
      await create('ik-broken'),
      await create('ik-broken'),
    ]);
    expect(broken.map((r) => r.status)).toEqual([201, 201]);
    expect(broken[1]?.headers.get('idempotent-replayed')).toBe('false');
    expect(new Set(broken.map((r) => r.body.order_id)).size).toBe(2); // one key, two effects
    expect(await skuCounters(s, 'ik-b')).toMatchObject({ available: 6, held: 4 });

    // Contrast, the guard in place: the retry replays the first answer byte for byte; nothing moves.
    const first = await create('ik-real');
    const again = await create('ik-real');
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
    expect(again.text).toBe(first.text);
    expect(await skuCounters(s, 'ik-b')).toMatchObject({ available: 4, held: 6 });
    expect(await countRows(s.db, 'orders', "user_id = 'ik-user'")).toBe(3);
  });
});
