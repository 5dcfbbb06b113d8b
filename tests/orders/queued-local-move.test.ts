import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSku, TENANT } from '../support/fixtures.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { createStockPump, type PumpRoles } from '../../src/orders/queued/pipeline.ts';
import { databaseTransport } from '../../src/orders/queued/transports/transport.ts';
import { everyOf } from '../support/every.ts';

// Both sides in one database, over the database transport (the embedded default): a relay step
// takes its outbox rows, delivers them into the far side's inbox (the results: applied to the
// orders) and marks them sent in ONE transaction (orders/queued/pipeline.ts, the local move). Proven by
// the rows themselves: the inbox row a step wrote and the outbox row it marked carry the same
// transaction id. The leased path (claim, deliver, mark: three transactions) is the control.
describe('queued orders, one database: each relay step is one transaction', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());

  const queue = async (sku: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await s.call('POST', '/v1/orders', {
        token: await s.token(TENANT, `${sku}-u${i}`),
        body: { sku, quantity: 1 },
        headers: { 'idempotency-key': `${sku}-k${i}`, prefer: 'respond-async' },
      });
      expect(r.status).toBe(202);
      ids.push(r.body.order_id as string);
    }
    return ids;
  };
  /** One pass of one step: the shop's relay of requests, the stock service's batch, or its relay of results. */
  const step = async (roles: PumpRoles, leased: boolean) => {
    const pump = createStockPump({
      shopDb: s.deps.db,
      stockDb: s.deps.db,
      clock: s.clock,
      leaseMs: 30_000,
      resendAfterMs: 600_000,
      roles,
      ...(leased ? { transport: databaseTransport(s.deps.db, s.deps.db) } : {}),
    });
    return pump.runOnce();
  };
  const REQUESTS = { shop: true, stock: false, results: false };
  const APPLY = { shop: false, stock: true, results: false };
  const RESULTS = { shop: false, stock: false, results: true };

  /** Per order: whether the request's inbox row and its mark, and the result's inbox row and its mark, share a transaction. */
  async function rows(ids: readonly string[]) {
    const requests = await s.db.pool.query<{ same: boolean; leased: boolean; sent: boolean }>(
      `SELECT r.xmin::text = i.xmin::text AS same, r.claimed_until IS NOT NULL AS leased, r.published_at IS NOT NULL AS sent
       FROM stock_requests_out r JOIN stock_inbox i ON i.request_key = r.request_key WHERE r.order_id = ANY($1)`,
      [ids],
    );
    return requests.rows;
  }
  async function results(ids: readonly string[]) {
    const found = await s.db.pool.query<{ same: boolean; sent: boolean; effect: string; status: string }>(
      `SELECT x.xmin::text = n.xmin::text AS same, x.published_at IS NOT NULL AS sent, n.effect, o.status
       FROM stock_outbox x JOIN stock_results_in n ON n.event_id = 'stock-' || x.event_id
       JOIN orders o ON o.order_id = x.order_id WHERE x.order_id = ANY($1)`,
      [ids],
    );
    return found.rows;
  }

  it('LM-01 30 queued orders: requests delivered and marked in one transaction, results applied and marked in one; every order CREATED, nothing left under a lease', async () => {
    await createSku(s, { sku: 'lm1', stock: 100 });
    const ids = await queue('lm1', 30);
    expect(await step(REQUESTS, false)).toMatchObject({ requests: 30, applied: 0, results: 0 });
    const delivered = await rows(ids);
    expect(delivered).toHaveLength(30);
    expect(everyOf(delivered, (r) => r.same && r.sent && !r.leased)).toBe(true);
    // Inbox rows are updated when applied: the transaction ids are compared before that.
    expect(await step(APPLY, false)).toMatchObject({ applied: 30 });
    expect(await step(RESULTS, false)).toMatchObject({ results: 30 });
    const answered = await results(ids);
    expect(answered).toHaveLength(30);
    expect(everyOf(answered, (r) => r.same && r.sent && r.effect === 'APPLIED' && r.status === 'CREATED')).toBe(true);
    // A pass with nothing to move moves nothing.
    expect(await step({ shop: true, stock: true }, false)).toMatchObject({ requests: 0, applied: 0, results: 0 });
  });

  it('LM-02 the control: over the leased path (claim, deliver, mark) the same rows come from three transactions, with the same outcome', async () => {
    await createSku(s, { sku: 'lm2', stock: 100 });
    const ids = await queue('lm2', 30);
    expect(await step(REQUESTS, true)).toMatchObject({ requests: 30 });
    const delivered = await rows(ids);
    expect(delivered).toHaveLength(30);
    expect(delivered.some((r) => r.same)).toBe(false);
    expect(everyOf(delivered, (r) => r.sent && !r.leased)).toBe(true);
    await step(APPLY, true);
    expect(await step(RESULTS, true)).toMatchObject({ results: 30 });
    const answered = await results(ids);
    expect(answered.some((r) => r.same)).toBe(false);
    expect(everyOf(answered, (r) => r.sent && r.effect === 'APPLIED' && r.status === 'CREATED')).toBe(true);
  });
});
