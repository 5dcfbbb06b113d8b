import { describe, expect, it } from 'vitest';
import { storeKinds, useChannelOn, waitFor } from './support.ts';

describe.each(storeKinds())('channel ledger rules ($name store)', (kind) => {
  const ctx = useChannelOn(kind);

  it('charges once per merchant order: a repeat gets the first answer and no second line', async () => {
    // Proves charge idempotency: same body, same txn, one CHARGE line, and the query agrees.
    const first = await ctx.api.charge('mo-1', 1990);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ result: 'CHARGED', txn: expect.stringMatching(/^txn_/) });
    const again = await ctx.api.charge('mo-1', 1990);
    expect(again).toEqual(first);
    const statement = await ctx.api.statement();
    expect(statement.lines).toEqual([
      { type: 'CHARGE', merchant_order: 'mo-1', amount: 1990, ref: first.body.txn, at: expect.any(String) },
    ]);
    expect(statement.net).toBe(1990);
    expect((await ctx.api.query('mo-1')).body).toMatchObject({ status: 'CHARGED', amount: 1990, txn: first.body.txn });
  });

  it('pages the statement from a cursor: every line once, in order, and nothing new reads nothing', async () => {
    // Proves the cursor extension (docs/channel.md): concurrent charges and a refund, read in pages
    // of 3, give exactly the full statement; without parameters the answer keeps its old shape.
    const orders = Array.from({ length: 8 }, (_, i) => `mo-page-${i}`);
    await Promise.all(orders.map((mo) => ctx.api.charge(mo, 100)));
    expect((await ctx.api.refund('mo-page-0', 'rk-page-0', 100)).status).toBe(200);
    const full = await ctx.api.statement();
    expect(Object.keys(full).sort()).toEqual(['lines', 'net']);
    const paged: unknown[] = [];
    let after = '0';
    let net = 0;
    for (;;) {
      const page = await ctx.api.get(`/statement?after=${after}&limit=3`);
      expect(page.status).toBe(200);
      paged.push(...page.body.lines);
      net += page.body.net;
      if (page.body.lines.length === 0) {
        expect(page.body.next).toBe(after); // nothing new: resume from where you are
        break;
      }
      after = page.body.next;
    }
    expect(paged).toEqual(full.lines);
    expect(net).toBe(full.net);
    expect((await ctx.api.get('/statement?limit=0')).status).toBe(400);
  });

  it('refuses the same merchant order with another amount with 422 and changes nothing', async () => {
    // Proves a reused merchant order with a different amount is a client error, not a second charge.
    const first = await ctx.api.charge('mo-2', 500);
    const other = await ctx.api.charge('mo-2', 501);
    expect(other.status).toBe(422);
    expect(other.type).toContain('application/problem+json');
    expect(other.body.code).toBe('AMOUNT_MISMATCH');
    expect((await ctx.api.statement()).lines.map((line) => line.ref)).toEqual([first.body.txn]);
  });

  it('close with nothing charged registers CLOSED, and every later charge is refused', async () => {
    // Proves the recovery guarantee: after a close, a charge can never land.
    expect((await ctx.api.close('mo-3')).body).toEqual({ merchant_order: 'mo-3', status: 'CLOSED' });
    for (let i = 0; i < 2; i++) {
      const refused = await ctx.api.charge('mo-3', 700);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ result: 'CLOSED', code: 'CLOSED' });
    }
    expect((await ctx.api.query('mo-3')).body.status).toBe('CLOSED');
    expect((await ctx.api.close('mo-3')).body.status).toBe('CLOSED');
    expect((await ctx.api.statement()).lines).toEqual([]);
  });

  it('charge lost on the wire, then close, then charge again: CLOSED and no line at all', async () => {
    // Proves the pay-timeout-then-recover path: the first charge never reached the ledger, so the close wins.
    await ctx.api.fault({ op: 'charge', kind: 'RESET_CONNECTION', merchant_order: 'mo-4' });
    await expect(ctx.api.charge('mo-4', 300)).rejects.toThrow();
    expect((await ctx.api.close('mo-4')).body.status).toBe('CLOSED');
    expect((await ctx.api.charge('mo-4', 300)).body.result).toBe('CLOSED');
    expect((await ctx.api.statement()).lines).toEqual([]);
  });

  it('charge, then close, then charge: close reports CHARGED and the repeat adds no second line', async () => {
    // Proves close never undoes a charge and reports what is there instead.
    const charged = await ctx.api.charge('mo-5', 300);
    expect((await ctx.api.close('mo-5')).body).toMatchObject({ status: 'CHARGED', amount: 300, txn: charged.body.txn });
    expect((await ctx.api.charge('mo-5', 300)).body).toEqual(charged.body);
    expect((await ctx.api.statement()).lines).toHaveLength(1);
  });

  it('a DELAY_REQUEST charge that arrives after a close is refused and leaves no CHARGE line', async () => {
    // Proves close and charge are mutually exclusive: the held charge reaches the ledger after the close.
    await ctx.api.fault({ op: 'charge', kind: 'DELAY_REQUEST', merchant_order: 'mo-6', ms: 300 });
    const late = ctx.api.charge('mo-6', 900);
    await waitFor(
      () => ctx.api.get('/_control/requests'),
      (r) => r.body.charge.by_order['mo-6'] === 1,
    );
    expect((await ctx.api.close('mo-6')).body.status).toBe('CLOSED');
    const answer = await late;
    expect(answer.status).toBe(409);
    expect(answer.body.result).toBe('CLOSED');
    expect((await ctx.api.statement()).lines).toEqual([]);
  });

  it('refunds in full once per refund key: the same key twice gives one REFUND line', async () => {
    // Proves refund idempotency by refund_key and that net returns to zero.
    const charged = await ctx.api.charge('mo-7', 1200);
    const first = await ctx.api.refund('mo-7', 'rk-7', 1200);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ result: 'REFUNDED', refund_id: expect.stringMatching(/^re_/) });
    const again = await ctx.api.refund('mo-7', 'rk-7', 1200);
    expect(again.body.refund_id).toBe(first.body.refund_id);
    const statement = await ctx.api.statement();
    expect(statement.lines.map((line) => [line.type, line.ref])).toEqual([
      ['CHARGE', charged.body.txn],
      ['REFUND', first.body.refund_id],
    ]);
    expect(statement.net).toBe(0);
    expect((await ctx.api.query('mo-7')).body).toMatchObject({ status: 'REFUNDED', refund_id: first.body.refund_id });
    expect((await ctx.api.charge('mo-7', 1200)).body.txn).toBe(charged.body.txn);
  });

  it('refuses partial refunds (422), refunds of nothing (409) and a second refund key (409)', async () => {
    // Proves every refund refusal leaves the ledger as it was.
    await ctx.api.charge('mo-8', 1000);
    expect(await ctx.api.refund('mo-8', 'rk-8', 400)).toMatchObject({ status: 422, body: { code: 'AMOUNT_MISMATCH' } });
    expect(await ctx.api.refund('mo-none', 'rk-x', 400)).toMatchObject({
      status: 409,
      body: { code: 'NOT_CHARGED', charge_status: 'NOT_FOUND' },
    });
    await ctx.api.close('mo-closed');
    expect(await ctx.api.refund('mo-closed', 'rk-y', 400)).toMatchObject({
      status: 409,
      body: { code: 'NOT_CHARGED', charge_status: 'CLOSED' },
    });
    expect((await ctx.api.statement()).lines.filter((line) => line.type === 'REFUND')).toEqual([]);
    await ctx.api.refund('mo-8', 'rk-8', 1000);
    expect(await ctx.api.refund('mo-8', 'rk-other', 1000)).toMatchObject({
      status: 409,
      body: { code: 'ALREADY_REFUNDED' },
    });
    await ctx.api.charge('mo-9', 1000);
    expect(await ctx.api.refund('mo-9', 'rk-8', 1000)).toMatchObject({
      status: 422,
      body: { code: 'REFUND_KEY_REUSED' },
    });
    expect((await ctx.api.statement()).lines.filter((line) => line.type === 'REFUND')).toHaveLength(1);
  });

  it('a DECLINE fault records a declined charge that moves no money and cannot be refunded', async () => {
    // Proves declines are final, idempotent answers with no statement line.
    await ctx.api.fault({ op: 'charge', kind: 'DECLINE', merchant_order: 'mo-10' });
    const declined = await ctx.api.charge('mo-10', 800);
    expect(declined.body).toMatchObject({ result: 'DECLINED', txn: expect.any(String) });
    expect((await ctx.api.charge('mo-10', 800)).body).toEqual(declined.body);
    expect((await ctx.api.close('mo-10')).body.status).toBe('DECLINED');
    expect((await ctx.api.refund('mo-10', 'rk-10', 800)).body.charge_status).toBe('DECLINED');
    expect((await ctx.api.statement()).lines).toEqual([]);
    expect((await ctx.api.query('mo-10')).body.status).toBe('DECLINED');
  });

  it('reports NOT_FOUND for an unknown order and nets charges minus refunds', async () => {
    // Proves the statement net is the sum of the lines, across orders.
    expect((await ctx.api.query('never-seen')).body).toEqual({ merchant_order: 'never-seen', status: 'NOT_FOUND' });
    await ctx.api.charge('n-1', 100);
    await ctx.api.charge('n-2', 250);
    await ctx.api.refund('n-1', 'rk-n1', 100);
    expect((await ctx.api.statement()).net).toBe(250);
    expect((await ctx.api.get('/statement?merchant_order=n-2')).body.lines).toHaveLength(1);
  });
});
