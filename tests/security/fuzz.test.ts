import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

// Property: whatever the body and headers of an order or a pay request, the answer is never a 5xx,
// and a 4xx moves nothing — no row, no counter, no money. (A 409 refusal of a keyed request
// stores its key by contract; everything else must stay put.) Seeded, so a failure replays.
const RUNS = 200;
const SEED = 11;

describe('fuzz: order and pay bodies and headers', () => {
  let s: PaymentStack;
  let buyer: string;
  let orderId = '';

  const business = async () => {
    // Not payment_notifications: the provider's notification of a successful pay lands whenever it lands.
    const tables = ['orders', 'reservations', 'order_transitions', 'outbox'];
    const counts = await Promise.all(tables.map((table) => countRows(s.db, table)));
    const skus = await s.db.pool.query(`SELECT sku, available, held, confirmed FROM sku_counters ORDER BY sku`);
    return JSON.stringify({ counts, skus: skus.rows, ledger: (await s.statement()).net });
  };
  const keys = () => countRows(s.db, 'idempotency_keys');

  beforeAll(async () => {
    s = await startPaymentStack({ config: { rateLimitPerMinute: 0, failedAuthPerMinute: 0 } });
    await createSku(s, { sku: 'fz', stock: 100_000 });
    // The fuzzer owns the order it pays: a valid pay succeeds once, later ones are refused.
    ({ orderId, token: buyer } = await s.buy('fuzzer', 'fz'));
  });
  afterAll(async () => s.close());

  // Near-valid inputs mostly (so the handlers, not only the edge, are reached), wild ones too.
  const validKey = fc.stringMatching(/^[\x21-\x7e]{1,24}$/);
  const header = fc.oneof(
    { weight: 4, arbitrary: validKey },
    fc.string({ maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom('', ' ', 'x'.repeat(256)),
  );
  const wild = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.jsonValue({ maxDepth: 3 }),
  );
  const sku = fc.oneof({ weight: 3, arbitrary: fc.constant('fz') }, wild);
  const quantity = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: -2, max: 4 }) }, wild);
  const orderBody = fc.oneof(
    { weight: 3, arbitrary: fc.record({ sku, quantity }, { requiredKeys: ['sku'] }) },
    fc.record(
      {
        sku,
        quantity,
        lines: fc.array(fc.record({ sku, quantity }, { requiredKeys: [] }), { maxLength: 3 }),
        extra: wild,
      },
      { requiredKeys: [] },
    ),
  );
  const payBody = fc.record(
    { method: fc.oneof(fc.constantFrom('channel', 'wallet', 'cash'), wild), extra: wild },
    { requiredKeys: [] },
  );
  const body = fc.oneof(
    { weight: 4, arbitrary: fc.oneof(orderBody, payBody).map((v) => JSON.stringify(v)) },
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), wild, { maxKeys: 3 }).map((v) => JSON.stringify(v)),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.constant(''),
  );
  const contentType = fc.oneof(
    { weight: 4, arbitrary: fc.constant('application/json') },
    fc.constantFrom(
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/problem+json',
    ),
  );
  const auth = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('bearer', 'Bearer') },
    fc.constant('none'),
    fc.string({ maxLength: 40 }),
  );
  const path = fc.oneof(
    fc.constant('/v1/orders'),
    fc.constant('pay'),
    fc.string({ maxLength: 40 }).map((id) => `/v1/orders/${encodeURIComponent(id)}/pay`),
  );

  it('never answers 5xx, and a 4xx changes nothing', async () => {
    const tally: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(path, body, header, contentType, auth, async (target, raw, key, type, scheme) => {
        const url = target === 'pay' ? `/v1/orders/${orderId}/pay` : target;
        const headers: Record<string, string> = { 'content-type': type, 'idempotency-key': key };
        if (scheme === 'bearer' || scheme === 'Bearer') headers.authorization = `${scheme} ${buyer}`;
        else if (scheme !== 'none') headers.authorization = scheme;
        const [beforeBusiness, beforeKeys] = [await business(), await keys()];
        let status: number;
        try {
          status = (await fetch(`${s.url}${url}`, { method: 'POST', headers, body: raw })).status;
        } catch (error) {
          // fetch itself refuses such a header (nothing was sent); a failed exchange is a failure.
          if (error instanceof TypeError && !error.message.includes('fetch failed')) return;
          throw error;
        }
        tally[status] = (tally[status] ?? 0) + 1;
        expect(status).toBeLessThan(500);
        if (status >= 400) {
          expect(await business()).toBe(beforeBusiness);
          if (status !== 409) expect(await keys()).toBe(beforeKeys);
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
    // The property must have reached the handlers, not only the edge: some orders made, some refused.
    expect(tally[201]).toBeGreaterThan(0);
    expect(tally[400]).toBeGreaterThan(0);
  });
});
