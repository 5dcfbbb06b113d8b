import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tryRefuseSoldOut } from '../../src/orders/create/waves.repo.ts';
import { createSku, TENANT } from '../support/fixtures.ts';
import { startStack, type Stack } from '../support/stack.ts';

// The sold-out wave's statement (issue 16 H): a wave whose keys are all fresh skips building the
// refused and done lists; any other wave still says buyer by buyer what happened.

const BODY = '{"code":"SOLD_OUT"}';
const buyer = (n: number, quantity = 1) => ({
  userId: `w-u${n}`,
  key: `w-k${n}`,
  digest: n.toString(16).padStart(64, '0'),
  quantity,
});

describe('tryRefuseSoldOut', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    await createSku(stack, { sku: 'w-gone', stock: 0 });
    await createSku(stack, { sku: 'w-two', stock: 2 });
  });
  afterAll(async () => {
    await stack.close();
  });

  const stored = async (sku: string) =>
    (
      await stack.db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM idempotency_keys
         WHERE tenant_id = $1 AND state = 'DONE' AND response_status = 409 AND response_body = $2 AND user_id LIKE $3`,
        [TENANT, BODY, `${sku}%`],
      )
    ).rows[0]!.n;

  it('WR-01 a wave of fresh keys: every buyer refused and every 409 key stored', async () => {
    const buyers = Array.from({ length: 40 }, (_, i) => buyer(i));
    const out = await tryRefuseSoldOut(stack.db.pool, TENANT, 'w-gone', buyers, BODY, new Date());
    expect(out.available).toBe(0);
    for (const b of buyers) expect(out.refused.has(`${b.userId}\n${b.key}`)).toBe(true);
    expect(out.done.size).toBe(0);
    expect(await stored('w-u')).toBe(40);
  });

  it('WR-02 a wave with a completed key and a duplicate: only the fresh buyers are refused, the old key replays', async () => {
    // w-u0/w-k0 is DONE from WR-01 (digest 0…0); w-u100 is in the wave twice.
    const buyers = [buyer(0), buyer(100), buyer(100), buyer(101)];
    const out = await tryRefuseSoldOut(stack.db.pool, TENANT, 'w-gone', buyers, BODY, new Date());
    expect(out.refused.has('w-u0\nw-k0')).toBe(false);
    expect(out.done.get('w-u0\nw-k0')?.digest).toBe('0'.repeat(64));
    expect(out.refused.has('w-u100\nw-k100')).toBe(true);
    expect(out.refused.has('w-u101\nw-k101')).toBe(true);
    expect(out.refused.has('w-u999\nw-k999')).toBe(false);
    expect(await stored('w-u')).toBe(42);
  });

  it('WR-03 units left: a buyer they fit is not refused and no key is written for them', async () => {
    const buyers = [
      { ...buyer(200, 1), userId: 'w-x200' },
      { ...buyer(201, 3), userId: 'w-x201' },
    ];
    const out = await tryRefuseSoldOut(stack.db.pool, TENANT, 'w-two', buyers, BODY, new Date());
    expect(out.available).toBe(2);
    expect(out.refused.has('w-x200\nw-k200')).toBe(false);
    expect(out.refused.has('w-x201\nw-k201')).toBe(true);
    expect(await stored('w-x')).toBe(1);
  });
});
