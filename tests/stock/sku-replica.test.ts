import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TENANT } from '../support/fixtures.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { createSku } from '../../src/stock/index.ts';

// Split databases (FLASHPAY_STOCK_SERVICE=separate): a shop's SKU rows are the stock service's
// definitions replicated. A write on the shop would sell from counters the stock service never
// sees, so the shop refuses it, changes nothing, and points at the stock service's port.
describe('SKU writes on a shop whose stock service has its own database', () => {
  let shop: Stack;
  let stock: TestDatabase;
  let admin: string;
  beforeAll(async () => {
    stock = await freshDatabase({ poolSize: 2 });
    shop = await startStack({
      config: { stockService: 'separate', stockDatabaseUrl: stock.url, orderMode: 'async' },
    });
    admin = await shop.token(TENANT, 'ops', 'admin');
    // The replica row a published definition leaves on the shop.
    await createSku(
      shop.db.pool,
      { tenantId: TENANT, sku: 'rep1', name: 'Replica', price: 700, stock: 5, perUserLimit: null, holdTtlMs: 60_000 },
      shop.clock,
    );
  });
  afterAll(async () => {
    await shop.close();
    await stock.drop();
  });

  const skuRows = async (db: TestDatabase) =>
    (
      await db.pool.query<{ sku: string; name: string; price: number; total: number; available: number }>(
        'SELECT sku, name, price, total, available FROM skus WHERE tenant_id = $1 ORDER BY sku',
        [TENANT],
      )
    ).rows;

  it('SR-01 POST /v1/admin/skus is 409 SKU_OWNED_BY_STOCK_SERVICE and writes no row on either database', async () => {
    const res = await shop.call('POST', '/v1/admin/skus', {
      token: admin,
      body: { sku: 'rep2', name: 'Shop-made', price: 100, stock: 10 },
    });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ status: 409, code: 'SKU_OWNED_BY_STOCK_SERVICE' });
    expect((await skuRows(shop.db)).map((r) => r.sku)).toEqual(['rep1']);
    expect(await skuRows(stock)).toEqual([]);
  });

  it('SR-02 PATCH (price, name, add_stock) is refused and the replica is unchanged; GET still reads it', async () => {
    for (const body of [{ price: 1 }, { name: 'Renamed' }, { add_stock: 50 }]) {
      const res = await shop.call('PATCH', '/v1/admin/skus/rep1', { token: admin, body });
      expect([res.status, (res.body as { code: string }).code]).toEqual([409, 'SKU_OWNED_BY_STOCK_SERVICE']);
    }
    expect(await skuRows(shop.db)).toEqual([{ sku: 'rep1', name: 'Replica', price: 700, total: 5, available: 5 }]);
    const read = await shop.call('GET', '/v1/admin/skus/rep1', { token: admin });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ sku: 'rep1', price: 700, available: 5 });
  });

  it('SR-03 authentication is still checked first: a buyer gets 403, no token 401', async () => {
    const buyer = await shop.token(TENANT, 'b1');
    const body = { sku: 'rep3', name: 'X', price: 1, stock: 1 };
    expect((await shop.call('POST', '/v1/admin/skus', { token: buyer, body })).status).toBe(403);
    expect((await shop.call('POST', '/v1/admin/skus', { body })).status).toBe(401);
  });
});
