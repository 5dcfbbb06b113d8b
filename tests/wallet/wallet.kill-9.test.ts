import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnFixture } from '../support/spawn.ts';
import { countRows, startStack, TEST_JWT_SECRET, type Stack } from '../support/stack.ts';
import { createSku, credit, order, TENANT, walletPay } from './support.ts';

describe('a wallet pay whose process dies after the commit', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  it('W-06 kill -9 between the debit commit and the answer: the retry with the same key answers PAID, one debit', async () => {
    // Proves the debit, PAID and the key's answer are one commit: the client that lost the reply learns the truth, nothing moves twice.
    await createSku(s, { sku: 'wk', price: 400, stock: 2 });
    const buyer = await s.token(TENANT, 'wk-user');
    await credit(s, 'wk-user', 1_000);
    const id = await order(s, buyer, 'wk');
    const child = spawnFixture('wallet-api.ts', { FLASHPAY_FAULTPOINT: 'wallet-pay.after-commit' }, [
      s.db.url,
      TEST_JWT_SECRET,
    ]);
    try {
      const api = (await child.waitFor('API ', 30_000)).slice(4).trim();
      const lost = fetch(`${api}/v1/orders/${id}/pay`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${buyer}`,
          'content-type': 'application/json',
          'idempotency-key': 'crash-pay',
        },
        body: JSON.stringify({ method: 'wallet' }),
      }).then(
        (r) => r.status,
        () => 'no answer',
      );
      await child.waitFor('STAGE wallet-pay.after-commit', 30_000);
      expect(await child.kill9()).toBe('SIGKILL');
      expect(await lost).toBe('no answer');
    } finally {
      await child.kill9();
    }
    const retry = await walletPay(s, buyer, id, 'crash-pay');
    expect([retry.status, retry.body, retry.headers.get('idempotent-replayed')]).toEqual([
      200,
      { order_id: id, status: 'PAID' },
      'true',
    ]);
    expect(await countRows(s.db, 'wallet_transfers', "order_id = $1 AND kind = 'DEBIT'", [id])).toBe(1);
    expect((await s.call('GET', '/v1/wallet', { token: buyer })).body).toEqual({ balance: 600 });
    expect(await countRows(s.db, 'outbox', "order_id = $1 AND event_type = 'ORDER_PAID'", [id])).toBe(1);
  });
});
