import { describe, expect, it } from 'vitest';
import { storeKinds, useChannelOn } from './support.ts';
import { everyOf } from '../support/every.ts';

describe.each(storeKinds())('channel under concurrent load ($name store)', (kind) => {
  const ctx = useChannelOn(kind);

  it('200 concurrent charges of one merchant order: one CHARGE line, 200 equal answers', async () => {
    // Proves charge is serialized per merchant order: no double charge however the requests race.
    const answers = await Promise.all(Array.from({ length: 200 }, () => ctx.api.charge('hot', 4990)));
    expect(everyOf(answers, (answer) => answer.status === 200)).toBe(true);
    expect(new Set(answers.map((answer) => JSON.stringify(answer.body))).size).toBe(1);
    const statement = await ctx.api.statement();
    expect(statement.lines).toHaveLength(1);
    expect(statement.net).toBe(4990);
    expect((await ctx.api.get('/_control/requests')).body.charge.by_order.hot).toBe(200);
  });

  it('300 concurrent charges of distinct orders lose no line', async () => {
    // Proves the lock is per order, not global, and nothing is dropped under a loopback burst.
    const orders = Array.from({ length: 300 }, (_, i) => `burst-${i}`);
    const answers = await Promise.all(orders.map((mo, i) => ctx.api.charge(mo, 100 + i)));
    expect(answers.filter((answer) => answer.body.result === 'CHARGED')).toHaveLength(300);
    const statement = await ctx.api.statement();
    expect(new Set(statement.lines.map((line) => line.merchant_order))).toEqual(new Set(orders));
    expect(statement.net).toBe(orders.reduce((sum, _, i) => sum + 100 + i, 0));
  });

  it('a close racing a charge on each of 50 orders: each order is either closed with no line or charged once', async () => {
    // Proves close and charge are mutually exclusive: the two answers of each order always agree.
    const orders = Array.from({ length: 50 }, (_, i) => `race-${i}`);
    const results = await Promise.all(
      orders.map(async (mo) => Promise.all([ctx.api.charge(mo, 1000), ctx.api.close(mo)])),
    );
    const lines = (await ctx.api.statement()).lines;
    results.forEach(([charge, close], i) => {
      const mo = orders[i] ?? '';
      const linesOfOrder = lines.filter((line) => line.merchant_order === mo);
      if (close.body.status === 'CLOSED') {
        expect(charge.body.result).toBe('CLOSED');
        expect(linesOfOrder).toEqual([]);
      } else {
        expect(close.body).toMatchObject({ status: 'CHARGED', txn: charge.body.txn });
        expect(linesOfOrder).toHaveLength(1);
      }
    });
  });
});
