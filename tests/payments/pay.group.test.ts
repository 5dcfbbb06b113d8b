import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { groupPayCommits } from '../../src/payments/pay.group.ts';
import { answerEvent } from '../../src/payments/answers.ts';
import { armMutation } from '../../src/platform/mutations.ts';

// Group commit of the pays' last transactions (src/payments/pay.group.ts): concurrent pays share
// one commit, each still gets its own answer, its own charge and its own key; a member that fails
// rolls its group back and every member commits alone.

describe('paying: concurrent pays share their last commit', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    // 24 charges at once on a shared test machine (the provider double runs in this process): its
    // answer must not pass the pay timeout, or an UNKNOWN would measure the machine's load.
    s = await startPaymentStack({ config: { payTimeoutMs: 2_000 } });
  });
  afterAll(async () => s.close());

  const buyers = async (sku: string, n: number) => {
    await createSku(s, { sku, stock: n });
    return Promise.all(Array.from({ length: n }, (_, i) => s.buy(`${sku}-u${i}`, sku)));
  };
  /** Distinct transactions that wrote these orders' current rows (one group: one). */
  const writers = async (orderIds: string[]) =>
    (
      await s.db.pool.query<{ n: number }>(
        'SELECT count(DISTINCT xmin::text)::int AS n FROM orders WHERE order_id = ANY($1::text[])',
        [orderIds],
      )
    ).rows[0]?.n;

  it('PG-01 many orders paid at once over HTTP: each its own PAID answer, one charge each, every key replays', async () => {
    // The pay's answer decides (no notification racing it), so each answer is the pay's own.
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    const orders = await buyers('g1', 24);
    const paid = await Promise.all(orders.map((o) => s.pay(o.token, o.orderId, `${o.key}/pay`)));
    paid.forEach((answer, i) => {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ order_id: orders[i]!.orderId, status: 'PAID' });
    });
    for (const o of orders) expect(await s.chargeRequests(o.orderId)).toBe(1);
    const replays = await Promise.all(orders.map((o) => s.pay(o.token, o.orderId, `${o.key}/pay`)));
    replays.forEach((replay, i) => {
      expect(replay.text).toBe(paid[i]!.text);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    });
    const ids = orders.map((o) => o.orderId);
    expect(await countRows(s.db, 'outbox', "order_id = ANY($1::text[]) AND event_type = 'ORDER_PAID'", [ids])).toBe(24);
    expect(await skuCounters(s, 'g1')).toMatchObject({ available: 0, held: 0, confirmed: 24 });
    expect(await s.chargeRequests()).toBeGreaterThanOrEqual(24);
  });

  it('PG-02 a group commits its answers in one transaction; a failing member rolls it back and the others commit alone', async () => {
    // Orders left PAYING: the provider answers after the pay's timeout (2 s here: UNKNOWN), having charged.
    const orders = await buyers('g2', 8);
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', ms: 2_500, times: 8 });
    const unknown = await Promise.all(orders.map((o) => s.pay(o.token, o.orderId)));
    expect(unknown.map((a) => a.body.status)).toEqual(Array(8).fill('UNKNOWN'));
    const deps = paymentDeps(s.deps);
    // concurrent 0: every member collects for the window, so the four below form one group.
    const commits = groupPayCommits(deps, { concurrent: 0, windowMs: 20 });
    const charged = answerEvent('charge', 'CHARGED', 'charge', 1990);
    const together = orders.slice(0, 4);
    const applied = await Promise.all(
      together.map((o) => commits.record({ orderId: o.orderId, answer: charged, complete: async () => {} })),
    );
    expect(applied.map((a) => a.outcome)).toEqual(Array(4).fill('PAID'));
    expect(await writers(together.map((o) => o.orderId))).toBe(1);

    const [failing, ...rest] = orders.slice(4);
    const results = await Promise.allSettled(
      orders.slice(4).map((o) =>
        commits.record({
          orderId: o.orderId,
          answer: charged,
          complete: async () => {
            if (o === failing) throw new Error('this member fails');
          },
        }),
      ),
    );
    expect(results[0]).toMatchObject({ status: 'rejected', reason: { message: 'this member fails' } });
    expect(results.slice(1).map((r) => r.status === 'fulfilled' && r.value.outcome)).toEqual(Array(3).fill('PAID'));
    expect((await s.order(failing!.orderId)).status).toBe('UNKNOWN'); // still PAYING: its transaction rolled back
    for (const o of rest) expect((await s.order(o.orderId)).status).toBe('PAID');
    expect(await writers(rest.map((o) => o.orderId))).toBe(3); // each alone after the group failed
    expect(await countRows(s.db, 'outbox', "order_id = $1 AND event_type = 'ORDER_PAID'", [failing!.orderId])).toBe(0);
  });
  it("PG-02b control: with the members not run alone after a failed group (payments.group.members-alone), one member's failure is every member's", async () => {
    const orders = await buyers('g2b', 4);
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', ms: 2_500, times: 4 });
    const unknown = await Promise.all(orders.map((o) => s.pay(o.token, o.orderId)));
    expect(unknown.map((a) => a.body.status)).toEqual(Array(4).fill('UNKNOWN'));
    const commits = groupPayCommits(paymentDeps(s.deps), { concurrent: 0, windowMs: 20 });
    const charged = answerEvent('charge', 'CHARGED', 'charge', 1990);
    const [failing] = orders;
    const disarm = armMutation('payments.group.members-alone');
    let results: PromiseSettledResult<unknown>[];
    try {
      results = await Promise.allSettled(
        orders.map((o) =>
          commits.record({
            orderId: o.orderId,
            answer: charged,
            complete: async () => {
              if (o === failing) throw new Error('this member fails');
            },
          }),
        ),
      );
    } finally {
      disarm();
    }
    // PG-02's check fires: the three sound members fail with the fourth and stay unpaid.
    expect(results.map((r) => r.status)).toEqual(Array(4).fill('rejected'));
    for (const o of orders) expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
  });
});
