import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sagaDeps } from '../../src/recovery/index.ts';
import { runSagaPass } from '../../src/saga/index.ts';
import { startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';
import { everyOf } from '../support/every.ts';

// The saga pass of `flashpay start` keeps up with a sale: one pass starts and fulfils every PAID
// order it finds, in rounds of 200, not 200 per pass (before: 200 every FLASHPAY_RECOVERY_INTERVAL_MS,
// 40 orders a second at the default 5 s); sagas waiting out a backoff never hide the orders paid
// after them; and a saga is tried at most once per pass, whatever its round.
describe('the saga pass: every PAID order, once per pass', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack({ config: { payTimeoutMs: 2_000 } }); // no lost answers here: generous for a loaded machine
  });
  afterAll(async () => s.close());

  /** `n` PAID orders of SKU `sku` written as pay leaves them (unit CONFIRMED), `minutesAgo` old. */
  async function paidOrders(sku: string, n: number, minutesAgo = 0): Promise<string[]> {
    const at = new Date(s.clock.now().getTime() - minutesAgo * 60_000);
    // `held` counts the units out, CONFIRMED ones included (migration 110).
    await s.db.pool.query(
      `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, hold_ttl_ms, created_at)
       VALUES ($1, $2, 'Seat', 120, $3, 0, $3, 60000, $4)`,
      [TENANT, sku, n, at],
    );
    const ids = Array.from({ length: n }, (_, i) => `${sku}-${String(i).padStart(4, '0')}`);
    await s.db.pool.query(
      `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
       SELECT $1, 'res-' || id, 'u-' || id, $2, 1, 'CONFIRMED', $4, $4, $4 FROM unnest($3::text[]) AS id`,
      [TENANT, sku, ids, at],
    );
    await s.db.pool.query(
      `INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
       SELECT id, $1, 'u-' || id, $2, 1, 120, 'PAID', 3, 'res-' || id, $4, $4 FROM unnest($3::text[]) AS id`,
      [TENANT, sku, ids, at],
    );
    return ids;
  }

  const fulfilCalls = async () =>
    ((await s.control('GET', '/_control/requests')) as Record<string, { by_order: Record<string, number> }>).fulfil
      ?.by_order ?? {};

  async function sagaRows(ids: readonly string[]) {
    const result = await s.db.pool.query<{
      order_id: string;
      fulfilment_status: string;
      fulfilment_ref: string | null;
      state: string | null;
      attempts: number | null;
      claimed: boolean;
      journal: string | null;
    }>(
      `SELECT o.order_id, o.fulfilment_status, o.fulfilment_ref, g.state, g.attempts, g.claimed_until IS NOT NULL AS claimed,
              (SELECT string_agg(j.step || ':' || j.key || ':' || j.status, ' ' ORDER BY j.seq) FROM saga_journal j
                WHERE j.saga_id = o.order_id) AS journal
       FROM orders o LEFT JOIN sagas g ON g.saga_id = o.order_id WHERE o.order_id = ANY($1) ORDER BY o.order_id`,
      [ids],
    );
    return result.rows;
  }

  it('SP-01 one pass fulfils 450 PAID orders (rounds of 200), each once, journalled in step order; a saga that fails is tried once in that pass', async () => {
    const ids = await paidOrders('sp1', 450);
    const failing = ids[7]!;
    await s.control('POST', '/_control/faults', { op: 'fulfil', kind: 'ERROR_500', merchant_order: failing, times: 1 });
    const report = await runSagaPass(sagaDeps(s.deps));
    expect(report).toMatchObject({ started: 450, examined: 450, done: 449, compensated: 0 });
    expect(report.pending.map((p) => [p.order_id, p.state])).toEqual([[failing, 'FORWARD']]);

    const rows = await sagaRows(ids);
    const calls = await fulfilCalls();
    for (const row of rows) {
      const id = row.order_id;
      const fulfil = id === failing ? 'UNKNOWN' : 'DONE'; // a 500 may have acted: UNKNOWN, asked by key next time
      expect(row.journal).toBe(`reserve:res-${id}:DONE charge:${id}:DONE fulfil:${id}/fulfil:${fulfil}`);
      expect(row.claimed).toBe(false);
      expect(calls[id]).toBe(1);
      if (id === failing) expect([row.state, row.attempts, row.fulfilment_status]).toEqual(['FORWARD', 1, 'PENDING']);
      else {
        expect([row.state, row.attempts, row.fulfilment_status]).toEqual(['DONE', 0, 'FULFILLED']);
        expect(row.fulfilment_ref).toMatch(/^ful_/);
      }
    }

    // The next pass retries the failed one (its fault is spent) and touches nothing else.
    expect(await runSagaPass(sagaDeps(s.deps))).toMatchObject({ started: 0, examined: 1, done: 1, pending: [] });
    expect((await sagaRows([failing]))[0]).toMatchObject({ state: 'DONE', fulfilment_status: 'FULFILLED' });
    expect((await fulfilCalls())[failing]).toBe(2);
    expect(Object.values(await fulfilCalls()).reduce((a, b) => a + b, 0)).toBe(451);
  });

  it('SP-02 250 sagas waiting out a backoff do not hide an order paid after them', async () => {
    const waiting = await paidOrders('sp2-old', 250, 30);
    const later = new Date(s.clock.now().getTime() + 3_600_000);
    await s.db.pool.query(
      `INSERT INTO sagas (saga_id, flow, state, attempts, next_attempt_at, deadline_at, started_at, updated_at)
       SELECT id, 'order-after-paid', 'FORWARD', 5, $2, $2, now(), now() FROM unnest($1::text[]) AS id`,
      [waiting, later],
    );
    const [fresh] = await paidOrders('sp2-new', 1);
    const report = await runSagaPass(sagaDeps(s.deps));
    expect(report).toMatchObject({ started: 1, examined: 1, done: 1, pending: [] });
    expect((await sagaRows([fresh!]))[0]).toMatchObject({ state: 'DONE', fulfilment_status: 'FULFILLED' });
    // The waiting ones were neither started again nor examined early.
    const untouched = await sagaRows(waiting);
    expect(everyOf(untouched, (r) => r.state === 'FORWARD' && r.attempts === 5 && r.journal === null)).toBe(true);
    const calls = await fulfilCalls();
    expect(waiting.filter((id) => calls[id] !== undefined)).toEqual([]);
  });
});
