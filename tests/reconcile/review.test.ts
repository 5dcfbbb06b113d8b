import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLedgerPaymentStack, plantLedgerLine, type LedgerPaymentStack } from '../support/plant.ts';
import { createSku } from '../support/payments.ts';
import { PRICE, reconciliation, refundAtChannel } from './scenario.ts';

// Issue 37's REVIEW outcome: a provider whose statement and query contradict each other about one
// order (paid in the query, refunded in the statement) gets the order a note for a person; an
// order whose statement and query agree with each other is an ordinary mismatch, and (issue 48)
// when both say refunded the provider already did it: the order converges to REFUNDED.
describe('reconciliation: REVIEW when the provider contradicts itself', () => {
  let s: LedgerPaymentStack;
  beforeAll(async () => {
    s = await startLedgerPaymentStack({ config: { payTimeoutMs: 5_000 } });
    await createSku(s, { sku: 'rv', stock: 4, price: PRICE });
  });
  afterAll(async () => s.close());

  async function paidOrder(user: string): Promise<string> {
    const o = await s.buy(user, 'rv');
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('PAID');
    return o.orderId;
  }

  async function attention(): Promise<Array<{ order_id: string; reason: string; status: string }>> {
    const listed = await s.call('GET', '/v1/admin/attention', { token: s.admin });
    expect(listed.status).toBe(200);
    return listed.body.orders;
  }

  it('RV-01 a refund line the provider still answers CHARGED for: REVIEW, one note for a person, the order untouched', async () => {
    const contradicted = await paidOrder('rv-a');
    // The statement gets a refund the charge record never saw: the query still says CHARGED.
    await plantLedgerLine(s.ledger, 'REFUND', contradicted, PRICE);
    const report = await reconciliation(s);
    expect(report.mismatches).toContainEqual(
      expect.objectContaining({ order_id: contradicted, class: 'PAID_BUT_REFUNDED' }),
    );
    expect(report.review).toEqual([
      expect.objectContaining({ order_id: contradicted, class: 'PAID_BUT_REFUNDED', query: 'CHARGED' }),
    ]);
    const notes = (await attention()).filter((n) => n.order_id === contradicted);
    expect(notes).toEqual([expect.objectContaining({ status: 'PAID', reason: expect.stringMatching(/^REVIEW: /) })]);
    expect((await s.order(contradicted)).status).toBe('PAID');

    // Acknowledged, then judged again: the same note is not written anew, so it stays acknowledged.
    expect(
      (await s.call('POST', `/v1/admin/attention/${contradicted}/ack`, { token: s.operator, body: {} })).status,
    ).toBe(200);
    const again = await reconciliation(s);
    expect(again.review?.map((r) => r.order_id)).toEqual([contradicted]);
    expect((await attention()).some((n) => n.order_id === contradicted)).toBe(false);
  });

  it('RV-03 an order that already has an open note keeps it: REVIEW is reported, the unread note is not replaced', async () => {
    const noted = await paidOrder('rv-c');
    const unread = 'refund refused by the provider: 402 card_declined';
    await s.db.pool.query('UPDATE orders SET attention = $2 WHERE order_id = $1', [noted, unread]);
    await plantLedgerLine(s.ledger, 'REFUND', noted, PRICE);
    const report = await reconciliation(s);
    expect(report.review?.map((r) => r.order_id)).toContain(noted);
    expect((await attention()).filter((n) => n.order_id === noted).map((n) => n.reason)).toEqual([unread]);
  });

  it('RV-02 a refund the provider agrees about (query REFUNDED, statement refunded), its notification never delivered: a mismatch, not REVIEW, and the order converges to REFUNDED once (issue 48)', async () => {
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
    try {
      const refundedByHand = await paidOrder('rv-b');
      await refundAtChannel(s, refundedByHand, 'refund-by-hand');
      const report = await reconciliation(s);
      expect(report.mismatches).toContainEqual(
        expect.objectContaining({ order_id: refundedByHand, class: 'PAID_BUT_REFUNDED' }),
      );
      expect(report.review?.map((r) => r.order_id) ?? []).not.toContain(refundedByHand);
      // The two witnesses agree: the provider already refunded, the decider converged the order.
      const view = await s.order(refundedByHand);
      expect([view.status, view.timeline.at(-1)?.reason]).toEqual([
        'REFUNDED',
        expect.stringMatching(/^reconciliation: /),
      ]);
      const again = await reconciliation(s);
      expect(again.mismatches.filter((m) => m.order_id === refundedByHand)).toEqual([]);
      expect((await s.order(refundedByHand)).timeline.filter((t) => t.to === 'REFUNDED')).toHaveLength(1);
    } finally {
      await s.control('POST', '/_control/callbacks', { mode: 'AUTO' });
    }
  });
});
