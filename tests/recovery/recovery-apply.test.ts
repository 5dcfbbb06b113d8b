import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { providerClient, queryAnswer } from '../../src/payments/index.ts';
import { ANSWER_GROUP_MAX, ANSWER_LINGER_MS, answerApplier } from '../../src/recovery/recovery.apply.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

// Recovery writes the provider's answers in groups: an answer that finds the writer idle waits up
// to ANSWER_LINGER_MS for others, so an outage's thousands of answers cost tens of commits, not
// thousands. Which transaction wrote a transition is read from its log row's xmin.
/** The test's own provider queries: long enough for a loaded 2-core machine, never the stack's 150 ms. */
const QUERY_TIMEOUT_MS = 10_000;

describe('recovery answers applied in groups', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: 150 } });
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  /** `n` orders left UNKNOWN: each charge went through after its pay stopped waiting. */
  async function unknownOrders(sku: string, n: number): Promise<string[]> {
    await createSku(s, { sku, stock: n });
    const orders = await Promise.all(Array.from({ length: n }, (_, i) => s.buy(`${sku}-${i}`, sku)));
    await s.control('POST', '/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', ms: 400, times: n });
    await Promise.all(orders.map((o) => s.pay(o.token, o.orderId)));
    for (const o of orders) expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
    return orders.map((o) => o.orderId);
  }

  /** The transactions that wrote the orders' PAID transitions, with how many each wrote. */
  async function paidTransactions(orderIds: string[]): Promise<number[]> {
    const result = await s.deps.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM order_transitions
       WHERE order_id = ANY($1::text[]) AND to_status = 'PAID' GROUP BY xmin::text ORDER BY n DESC`,
      [orderIds],
    );
    return result.rows.map((r) => r.n);
  }

  /** Queries the provider for each order and hands the answers to `apply`, `gapMs` apart. */
  async function answer(
    applier: ReturnType<typeof answerApplier>,
    orderIds: string[],
    gapMs: number,
  ): Promise<string[]> {
    // The stack's calls time out at 150 ms (payTimeoutMs, so that its pays go UNKNOWN); the test's
    // own queries get a client of the same provider with the time a loaded machine needs, asked
    // once each: a query that still comes back UNKNOWN is a wrong answer here, not a reason to ask
    // again (issue 55: it was asked up to 20 times).
    const provider = providerClient({ ...s.deps, config: { ...s.deps.config, payTimeoutMs: QUERY_TIMEOUT_MS } });
    const replies = await Promise.all(orderIds.map((id) => provider.query(id)));
    expect(replies.map((reply) => reply.kind)).not.toContain('UNKNOWN');
    const applied: Array<Promise<{ order?: { status: string } }>> = [];
    for (const [i, id] of orderIds.entries()) {
      if (i > 0 && gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
      applied.push(applier.apply(id, queryAnswer(replies[i]!)));
    }
    return (await Promise.all(applied)).map((a) => a.order?.status ?? '?');
  }

  // The linger is widened here so that a loaded machine's late timers cannot split the group.
  it('RA-01 answers that arrive 10 ms apart, within the linger, commit as one group', async () => {
    const ids = await unknownOrders('ra1', 5);
    expect(ANSWER_LINGER_MS).toBeGreaterThan(0);
    expect(await answer(answerApplier(paymentDeps(s.deps), 500), ids, 10)).toEqual(Array(5).fill('PAID'));
    expect(await paidTransactions(ids)).toEqual([5]);
    expect(await skuCounters(s, 'ra1')).toMatchObject({ confirmed: 5, held: 0 });
  });

  it('RA-01b the negative control: without the linger, the first answer goes alone at once', async () => {
    const ids = await unknownOrders('ra1b', 5);
    expect(await answer(answerApplier(paymentDeps(s.deps), 0), ids, 10)).toEqual(Array(5).fill('PAID'));
    // Later answers may still meet in a group (those that arrive while one commits).
    expect((await paidTransactions(ids)).length).toBeGreaterThan(1);
  });

  it('RA-02 a group holds at most ANSWER_GROUP_MAX answers: one more than that takes a second commit', async () => {
    const n = ANSWER_GROUP_MAX + 1;
    const ids = await unknownOrders('ra2', n);
    expect(await answer(answerApplier(paymentDeps(s.deps)), ids, 0)).toEqual(Array(n).fill('PAID'));
    expect(await paidTransactions(ids)).toEqual([ANSWER_GROUP_MAX, 1]);
    expect(await skuCounters(s, 'ra2')).toMatchObject({ confirmed: n, held: 0 });
  });
});
