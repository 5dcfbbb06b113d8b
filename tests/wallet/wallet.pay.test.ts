import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skuCounters } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { books, createSku, credit, order, TENANT, walletPay } from './support.ts';

describe('paying from the wallet (seed 004)', () => {
  let s: Stack;
  let admin: string;
  beforeAll(async () => {
    s = await startStack();
    admin = await s.token(TENANT, 'ops', 'admin');
  });
  afterAll(async () => s.close());

  it('W-01 credits are transfers named by the key: a replay answers the same, the same key with another amount is 422', async () => {
    // Proves a top-up happens once per key and that the ledger refuses an id reused for other content.
    const first = await credit(s, 'w1', 500, 'top-1');
    expect(first.body).toEqual({ user: 'w1', balance: 500, transfer_id: 'credit:top-1' });
    const again = await credit(s, 'w1', 500, 'top-1');
    expect([again.text, again.headers.get('idempotent-replayed')]).toEqual([first.text, 'true']);
    const other = await s.call('POST', '/v1/admin/wallets/w1/credits', {
      token: admin,
      body: { amount: 501, reason: 'test top-up' },
      headers: { 'idempotency-key': 'top-1' },
    });
    expect([other.status, other.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    // Another operator's key store does not know top-1; the credit's audit row names its operator, so
    // ops2 is refused (issue 48: it was a 201 replay when ops2 sent the same amount), whatever the content.
    const ops2 = await s.token(TENANT, 'ops2', 'admin');
    const byOther = await s.call('POST', '/v1/admin/wallets/w1/credits', {
      token: ops2,
      body: { amount: 7, reason: 'test top-up' },
      headers: { 'idempotency-key': 'top-1' },
    });
    expect([byOther.status, byOther.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR']);
    const buyer = await s.token(TENANT, 'w1');
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 500 });
    const view = await s.call('GET', '/v1/admin/wallets/w1', { token: admin });
    expect(view.body).toMatchObject({
      user: 'w1',
      balance: 500,
      transfers: [{ transfer_id: 'credit:top-1', kind: 'CREDIT', amount: 500 }],
    });
    expect((await s.call('GET', '/v1/admin/wallets/w1', { token: buyer })).status).toBe(403);
    const bad = await s.call('POST', '/v1/admin/wallets/w1/credits', {
      token: admin,
      body: { amount: 0, reason: 'test top-up' },
      headers: { 'idempotency-key': 'top-0' },
    });
    expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION']);
    const refused = await Promise.all([
      s.call('POST', '/v1/admin/wallets/w1/credits', { token: admin, body: { amount: 5, reason: 'test top-up' } }),
      s.call('POST', '/v1/admin/wallets/w1/credits', {
        token: admin,
        body: { amount: 5, extra: 1, reason: 'test top-up' },
        headers: { 'idempotency-key': 'top-x' },
      }),
      s.call('POST', '/v1/admin/wallets/w1/credits', {
        token: admin,
        body: { amount: 1.5, reason: 'test top-up' },
        headers: { 'idempotency-key': 'top-y' },
      }),
      s.call('POST', '/v1/admin/wallets/w1/credits', {
        token: buyer,
        body: { amount: 5, reason: 'test top-up' },
        headers: { 'idempotency-key': 'top-z' },
      }),
      s.call('GET', '/v1/wallet'),
    ]);
    expect(refused.map((r) => [r.status, r.body.code])).toEqual([
      [400, 'IDEMPOTENCY_KEY_MISSING'],
      [400, 'VALIDATION'],
      [400, 'VALIDATION'],
      [403, 'FORBIDDEN'],
      [401, 'UNAUTHENTICATED'],
    ]);
    expect(await countRows(s.db, 'wallet_transfers')).toBe(1);
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 500 });
  });

  it('W-02 a wallet pay debits, confirms, makes the order PAID and writes its event in one commit; too low a balance changes nothing', async () => {
    // Proves the refusal leaves the order payable and the money where it was, and is the key's final answer.
    await createSku(s, { sku: 'wp2', price: 300, stock: 5 });
    const buyer = await s.token(TENANT, 'w2');
    await credit(s, 'w2', 400);
    const a = await order(s, buyer, 'wp2');
    const b = await order(s, buyer, 'wp2');
    const paid = await walletPay(s, buyer, a, 'pay-a');
    expect([paid.status, paid.body]).toEqual([200, { order_id: a, status: 'PAID' }]);
    const refused = await walletPay(s, buyer, b, 'pay-b');
    expect([refused.status, refused.body.code]).toEqual([409, 'INSUFFICIENT_FUNDS']);
    expect((await walletPay(s, buyer, b, 'pay-b')).text).toBe(refused.text);
    expect((await s.call('GET', `/v1/orders/${b}`, { token: buyer })).body).toMatchObject({
      status: 'CREATED',
      reservation: { status: 'HELD' },
    });
    expect((await s.call('GET', `/v1/orders/${a}`, { token: buyer })).body).toMatchObject({
      status: 'PAID',
      reservation: { status: 'CONFIRMED' },
    });
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 100 });
    expect(await countRows(s.db, 'wallet_transfers', 'order_id = $1', [b])).toBe(0);
    expect(await countRows(s.db, 'outbox', 'order_id = $1', [b])).toBe(0);
    expect(await countRows(s.db, 'outbox', "order_id = $1 AND event_type = 'ORDER_PAID'", [a])).toBe(1);
    expect(await skuCounters(s, 'wp2')).toMatchObject({ available: 3, held: 1, confirmed: 1 });
    // A paid order is not payable again, by any method.
    const twice = await walletPay(s, buyer, a, 'pay-a-again');
    expect([twice.status, twice.body.code, twice.body.order_status]).toEqual([409, 'REJECTED', 'PAID']);
    const bad = await s.call('POST', `/v1/orders/${b}/pay`, {
      token: buyer,
      body: { method: 'cash' },
      headers: { 'idempotency-key': 'pay-cash' },
    });
    expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION']);
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
    const metrics = (await s.call('GET', '/metrics', { token: await s.token(TENANT, 'root', 'operator') })).text;
    expect(metrics).toMatch(/flashpay_wallet_transfers_total\{kind="DEBIT"\} [1-9]/);
    expect(metrics).toMatch(/flashpay_wallet_insufficient_funds_total\{kind="DEBIT"\} [1-9]/);
  });

  it('W-03 100 concurrent wallet pays by one buyer whose balance covers 7: exactly 7 PAID, 93 INSUFFICIENT_FUNDS, never negative', async () => {
    // Proves no overdraft under real concurrency: the balance row is the arbiter, the CHECK its backstop.
    await createSku(s, { sku: 'wp3', price: 1000, stock: 100 });
    const buyer = await s.token(TENANT, 'w3');
    await credit(s, 'w3', 7_500);
    const orders: string[] = [];
    for (let i = 0; i < 100; i++) orders.push(await order(s, buyer, 'wp3'));
    const answers = await Promise.all(orders.map((id) => walletPay(s, buyer, id)));
    const tally: Record<string, number> = {};
    for (const a of answers) {
      const cell = `${a.status} ${a.body.code ?? a.body.status}`;
      tally[cell] = (tally[cell] ?? 0) + 1;
    }
    expect(tally).toEqual({ '200 PAID': 7, '409 INSUFFICIENT_FUNDS': 93 });
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 500 });
    expect(await countRows(s.db, 'wallet_transfers', "user_id = 'w3' AND kind = 'DEBIT'")).toBe(7);
    expect(await countRows(s.db, 'orders', "user_id = 'w3' AND status = 'PAID'")).toBe(7);
    expect(await skuCounters(s, 'wp3')).toMatchObject({ total: 100, available: 0, held: 93, confirmed: 7 });
    expect(await books(s)).toEqual({ sum: 0, drift: [], negative: [] });
  });

  it('W-04 the same payment key sent 20 times at once: one debit, twenty identical answers', async () => {
    // Proves the payment key (Idempotency-Key) makes one debit however often it arrives.
    await createSku(s, { sku: 'wp4', price: 250, stock: 1 });
    const buyer = await s.token(TENANT, 'w4');
    await credit(s, 'w4', 1_000);
    const id = await order(s, buyer, 'wp4');
    const answers = await Promise.all(Array.from({ length: 20 }, () => walletPay(s, buyer, id, 'one-key')));
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`))).toEqual(
      new Set([`200 ${JSON.stringify({ order_id: id, status: 'PAID' })}`]),
    );
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'false')).toHaveLength(1);
    expect(await countRows(s.db, 'wallet_transfers', 'order_id = $1', [id])).toBe(1);
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 750 });
  });

  it('W-05 a wallet pay after the hold expired is refused and cancels the order; no money moves', async () => {
    // Proves the wallet never pays for a unit that is no longer held.
    await createSku(s, { sku: 'wp5', price: 100, stock: 1, hold_ttl_ms: 1000 });
    const buyer = await s.token(TENANT, 'w5');
    await credit(s, 'w5', 100);
    const id = await order(s, buyer, 'wp5');
    s.clock.advance(1001);
    const late = await walletPay(s, buyer, id);
    expect([late.status, late.body.code, late.body.order_status]).toEqual([409, 'REJECTED', 'CANCELLED']);
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 100 });
    expect(await skuCounters(s, 'wp5')).toMatchObject({ available: 1, held: 0, confirmed: 0 });
  });
});
