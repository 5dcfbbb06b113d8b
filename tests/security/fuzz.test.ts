import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';

// Property: whatever the body and headers of an order or a pay request, the answer is never a 5xx,
// and a 4xx moves nothing — no row, no counter, no money. (A 409 refusal of a keyed request
// stores its key by contract; everything else must stay put.) Seeded, so a failure replays.
const RUNS = 150;
const SEED = 11;

describe('fuzz: order and pay bodies and headers', () => {
  let s: PaymentStack;
  let buyer: string;
  let orderId = '';

  const business = async () => {
    const tables = ['orders', 'reservations', 'order_transitions', 'outbox', 'payment_notifications'];
    const counts = await Promise.all(tables.map((table) => countRows(s.db, table)));
    const skus = await s.db.pool.query(`SELECT sku, available, held, confirmed FROM skus ORDER BY sku`);
    return JSON.stringify({ counts, skus: skus.rows, ledger: (await s.statement()).net });
  };
  const keys = () => countRows(s.db, 'idempotency_keys');

  beforeAll(async () => {
    s = await startPaymentStack({ config: { rateLimitPerMinute: 0 } });
    await createSku(s, { sku: 'fz', stock: 100_000 });
    // The fuzzer owns the order it pays: a valid pay succeeds once, later ones are refused.
    ({ orderId, token: buyer } = await s.buy('fuzzer', 'fz'));
  });
  afterAll(async () => s.close());

  const header = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('', ' ', 'k', 'x'.repeat(256)));
  const field = fc.oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.constant('fz'), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 3 }));
  const body = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.dictionary(fc.constantFrom('sku', 'quantity', 'lines', 'method', 'extra', 'sku\u0000'), field, { maxKeys: 4 }).map((v) => JSON.stringify(v)),
    fc.string({ unit: 'binary', maxLength: 200 }),
  );
  const contentType = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/problem+json');
  const auth = fc.oneof(fc.constant('bearer'), fc.constant('Bearer'), fc.constant('none'), fc.string({ maxLength: 40 }));
  const path = fc.oneof(fc.constant('/v1/orders'), fc.constant('pay'), fc.string({ maxLength: 40 }).map((id) => `/v1/orders/${encodeURIComponent(id)}/pay`));

  it('never answers 5xx, and a 4xx changes nothing', async () => {
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
        expect(status).toBeLessThan(500);
        if (status >= 400) {
          expect(await business()).toBe(beforeBusiness);
          if (status !== 409) expect(await keys()).toBe(beforeKeys);
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
