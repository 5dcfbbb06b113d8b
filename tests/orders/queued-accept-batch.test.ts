import { MAX_ORDER_AMOUNT_MINOR } from '../../src/platform/money.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSku, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { keyedDeps } from '../../src/app.deps.ts';
import { requestDigest } from '../../src/idempotency/index.ts';
import { canonicalLines } from '../../src/orders/create/one.ts';
import { createQueuedBatched } from '../../src/orders/queued/pending.batch.ts';
import { everyOf } from '../support/every.ts';
import { armMutation } from '../../src/platform/mutations.ts';

// Issue 16, P7 accepted: concurrent queued creates (202 PENDING) written by one statement and one
// durable commit per group (orders/queued/pending.batch.ts); each buyer its own order, stock request, 202.
describe('queued creates, group commit (P7 accepted)', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => s.close());
  afterEach(() => {
    delete process.env.FLASHPAY_QUEUED_BATCH;
  });

  const queue = async (user: string, key: string, body: Record<string, unknown>) =>
    s.call('POST', '/v1/orders', {
      token: await s.token(TENANT, user),
      body,
      headers: { 'idempotency-key': key, prefer: 'respond-async' },
    });
  type Body = { sku?: string; quantity?: number; lines?: { sku: string; quantity?: number }[] };
  // The route's batcher called directly, every member in one turn of the event loop: they form
  // ONE group whatever the machine's load (over HTTP, arrivals under load may spread into groups
  // of one, which take the one-transaction path). The digest is the route's.
  const burst = (members: readonly { user: string; key: string; body: Body }[]) =>
    Promise.allSettled(
      members.map(({ user, key, body }) => {
        const lines = canonicalLines(
          (body.lines ?? [{ sku: body.sku ?? '', quantity: body.quantity }]).map((l) => ({
            sku: l.sku,
            quantity: l.quantity ?? 1,
          })),
        );
        const canonical = lines.length === 1 ? lines[0] : { lines };
        return createQueuedBatched(keyedDeps(s.deps), {
          principal: { tenantId: TENANT, userId: user, scope: 'buyer' },
          lines,
          scope: { tenantId: TENANT, userId: user, operation: 'create_order', key },
          digest: requestDigest('create_order', { respond: 'async' }, canonical),
          maxAmountMinor: MAX_ORDER_AMOUNT_MINOR,
        });
      }),
    );
  const rowsOf = async (table: string, ids: readonly string[]) =>
    Number(
      (await s.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE order_id = ANY($1)`, [ids]))
        .rows[0]!.n,
    );
  const transactions = async (ids: readonly string[]) =>
    Number(
      (
        await s.db.pool.query<{ n: string }>(
          'SELECT count(DISTINCT xmin::text) AS n FROM orders WHERE order_id = ANY($1)',
          [ids],
        )
      ).rows[0]!.n,
    );

  it('QA-01 N concurrent queued creates: N PENDING orders, N stock requests, grouped commits; each key replays its own 202 byte for byte', async () => {
    await createSku(s, { sku: 'qb1', stock: 5, price: 300 });
    await createSku(s, { sku: 'qb1b', stock: 5, price: 50 });
    const n = 40;
    const bodies = (i: number) =>
      i % 5 === 0 ? { lines: [{ sku: 'qb1b', quantity: 2 }, { sku: 'qb1' }] } : { sku: 'qb1', quantity: 1 + (i % 2) };
    const settled = await burst(
      Array.from({ length: n }, (_, i) => ({ user: `qb1-u${i}`, key: `qb1-k${i}`, body: bodies(i) })),
    );
    const first = settled.map((r) => {
      if (r.status !== 'fulfilled') throw r.reason;
      return { ...r.value, text: r.value.body, body: JSON.parse(r.value.body) };
    });
    expect(first.map((r) => [r.status, r.replayed])).toEqual(Array(n).fill([202, false]));
    const ids = first.map((r) => r.body.order_id as string);
    expect(new Set(ids).size).toBe(n);
    const statuses = await s.db.pool.query<{ status: string; user_id: string; order_id: string }>(
      'SELECT status, user_id, order_id FROM orders WHERE order_id = ANY($1)',
      [ids],
    );
    expect(everyOf(statuses.rows, (r) => r.status === 'PENDING')).toBe(true);
    // each order belongs to the buyer who got its id
    const owner = new Map(statuses.rows.map((r) => [r.order_id, r.user_id]));
    expect(ids.map((id) => owner.get(id))).toEqual(ids.map((_, i) => `qb1-u${i}`));
    expect(await rowsOf('stock_requests_out', ids)).toBe(n);
    expect(await rowsOf('order_transitions', ids)).toBe(n);
    expect(await rowsOf('order_lines', ids)).toBe(n + n / 5);
    // One group, one transaction (one durable commit) for the 40 buyers.
    expect(await transactions(ids)).toBe(1);
    const multi = first[0]!.body;
    expect([multi.amount, multi.lines.map((l: { sku: string }) => l.sku)]).toEqual([400, ['qb1', 'qb1b']]);
    expect(first[1]!.body).toMatchObject({ status: 'PENDING', sku: 'qb1', quantity: 2, amount: 600 });

    const again = await Promise.all(Array.from({ length: n }, (_, i) => queue(`qb1-u${i}`, `qb1-k${i}`, bodies(i))));
    expect(
      again.map((r) => [r.status, r.text, r.headers.get('idempotent-replayed'), r.headers.get('location')]),
    ).toEqual(first.map((r) => [202, r.text, 'true', `/v1/orders/${r.body.order_id}`]));
    expect(await countRows(s.db, 'orders', "user_id LIKE 'qb1-u%'")).toBe(n);
  });

  it('QA-02 the grouped 202 is the one-buyer 202 byte for byte (but the order id)', async () => {
    await createSku(s, { sku: 'qb2', stock: 5, price: 120, name: 'Grouped "thing" é' });
    const body = { lines: [{ sku: 'qb2', quantity: 3 }] };
    process.env.FLASHPAY_QUEUED_BATCH = '0';
    const alone = await queue('qb2-alone', 'qb2-a', body);
    delete process.env.FLASHPAY_QUEUED_BATCH;
    const grouped = (await burst(Array.from({ length: 6 }, (_, i) => ({ user: `qb2-u${i}`, key: `qb2-k${i}`, body }))))
      .map((r) => (r.status === 'fulfilled' ? r.value : undefined)!)
      .map((r) => ({ ...r, text: r.body, body: JSON.parse(r.body) as { order_id: string } }));
    expect(await transactions(grouped.map((r) => r.body.order_id))).toBe(1);
    const shape = (r: { text: string; body: { order_id: string } }) => r.text.split(r.body.order_id).join('ID');
    for (const r of grouped) {
      expect([r.status, shape(r), r.location]).toEqual([202, shape(alone), `/v1/orders/${r.body.order_id}`]);
      const replay = await queue(`qb2-u${grouped.indexOf(r)}`, `qb2-k${grouped.indexOf(r)}`, body);
      expect([replay.status, replay.text, replay.headers.get('preference-applied')]).toEqual([
        202,
        r.text,
        'respond-async',
      ]);
    }
    const payloads = await s.db.pool.query<{ payload: unknown; order_id: string }>(
      'SELECT payload, order_id FROM stock_requests_out WHERE order_id = ANY($1)',
      [[alone.body.order_id, grouped[0]!.body.order_id]],
    );
    const [a, b] = [alone.body.order_id, grouped[0]!.body.order_id];
    const byId = new Map(payloads.rows.map((r) => [r.order_id, JSON.stringify(r.payload)]));
    expect(byId.get(b)!.split(b).join('ID').replace('qb2-u0', 'U')).toBe(
      byId.get(a)!.split(a).join('ID').replace('qb2-alone', 'U'),
    );
  });

  it('QA-03 a reused key (422), an unknown SKU (404) and a replay in one group: the others succeed, nothing half-written', async () => {
    await createSku(s, { sku: 'qb3', stock: 5 });
    const earlier = await queue('qb3-r', 'qb3-reused', { sku: 'qb3', quantity: 1 });
    const replayed = await queue('qb3-p', 'qb3-replay', { sku: 'qb3', quantity: 1 });
    const [reused, unknown, replay, ...others] = await burst([
      { user: 'qb3-r', key: 'qb3-reused', body: { sku: 'qb3', quantity: 2 } },
      { user: 'qb3-x', key: 'qb3-unknown', body: { lines: [{ sku: 'qb3' }, { sku: 'qb3-nope' }] } },
      { user: 'qb3-p', key: 'qb3-replay', body: { sku: 'qb3', quantity: 1 } },
      ...Array.from({ length: 8 }, (_, i) => ({ user: `qb3-u${i}`, key: `qb3-k${i}`, body: { sku: 'qb3' } })),
    ]);
    const code = (r: PromiseSettledResult<unknown> | undefined) =>
      r?.status === 'rejected' ? (r.reason as { code?: string }).code : r?.status;
    expect([code(reused), code(unknown)]).toEqual(['IDEMPOTENCY_KEY_REUSED', 'SKU_NOT_FOUND']);
    const value = (r: PromiseSettledResult<{ status: number; body: string; replayed: boolean }> | undefined) =>
      r?.status === 'fulfilled' ? r.value : undefined;
    expect([value(replay)?.status, value(replay)?.body, value(replay)?.replayed]).toEqual([202, replayed.text, true]);
    expect(others.map((r) => value(r)?.status)).toEqual(Array(8).fill(202));
    const ids = others.map((r) => JSON.parse(value(r)!.body).order_id as string);
    expect(await transactions(ids)).toBe(1);
    expect([await rowsOf('order_lines', ids), await rowsOf('stock_requests_out', ids)]).toEqual([8, 8]);
    // The 404 stored nothing (no key, no order); the reused key still holds its first answer.
    expect(await countRows(s.db, 'idempotency_keys', "idempotency_key = 'qb3-unknown'")).toBe(0);
    expect(await countRows(s.db, 'orders', "user_id IN ('qb3-x', 'qb3-r', 'qb3-p')")).toBe(2);
    const again = await queue('qb3-r', 'qb3-reused', { sku: 'qb3', quantity: 1 });
    expect([again.status, again.text]).toEqual([202, earlier.text]);
  });
  it('QA-04 names and prices remembered between groups: a remembered SKU costs no read; a price or name changed meanwhile is what the next group writes and answers', async () => {
    await createSku(s, { sku: 'qb4', stock: 50, price: 300, name: 'Seat A' });
    await createSku(s, { sku: 'qb4b', stock: 50, price: 70, name: 'Pin' });
    // Reads of the SKUs' terms by the group path, counted on the pool (the statement is named).
    let reads = 0;
    const query = s.deps.db.query.bind(s.deps.db);
    (s.deps.db as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
      if ((config as { name?: string } | null)?.name === 'queued-group-skus') reads++;
      return (query as (...a: unknown[]) => unknown)(config, ...rest);
    };
    const group = async (tag: string, n = 4) => {
      const settled = await burst(
        Array.from({ length: n }, (_, i) => ({
          user: `qb4-${tag}-u${i}`,
          key: `qb4-${tag}-k${i}`,
          body: i % 2 === 0 ? { sku: 'qb4', quantity: 2 } : { lines: [{ sku: 'qb4' }, { sku: 'qb4b', quantity: 3 }] },
        })),
      );
      const answers = settled.map((r) => {
        if (r.status !== 'fulfilled') throw r.reason;
        return JSON.parse(r.value.body) as { order_id: string; amount: number; lines?: { name: string }[] };
      });
      const ids = answers.map((a) => a.order_id);
      expect(await transactions(ids)).toBe(1); // one group, one commit
      const rows = await s.db.pool.query<{ amount: number; prices: string; names: string }>(
        `SELECT o.amount, string_agg(l.unit_price::text, ',' ORDER BY l.line_no) AS prices,
                string_agg(l.name, ',' ORDER BY l.line_no) AS names
         FROM orders o JOIN order_lines l ON l.order_id = o.order_id WHERE o.order_id = ANY($1)
         GROUP BY o.order_id, o.amount ORDER BY array_position($1::text[], o.order_id)`,
        [ids],
      );
      return { answers, rows: rows.rows };
    };
    try {
      const a = await group('a');
      expect(reads).toBe(1);
      expect(a.answers.map((x) => x.amount)).toEqual([600, 510, 600, 510]);
      expect(a.rows.map((r) => [r.amount, r.prices, r.names])).toEqual([
        [600, '300', 'Seat A'],
        [510, '300,70', 'Seat A,Pin'],
        [600, '300', 'Seat A'],
        [510, '300,70', 'Seat A,Pin'],
      ]);
      // Same terms: the next group reads nothing before its statement.
      const b = await group('b');
      expect(reads).toBe(1);
      expect(b.answers.map((x) => x.amount)).toEqual([600, 510, 600, 510]);

      const admin = await s.token(TENANT, 'ops', 'admin');
      const patched = await s.call('PATCH', '/v1/admin/skus/qb4', {
        token: admin,
        body: { price: 450, name: 'Seat B' },
      });
      expect(patched.status).toBe(200);
      // The remembered terms are stale: the statement writes nothing, the group reads them and goes again.
      const c = await group('c');
      expect(reads).toBe(2);
      expect(c.answers.map((x) => x.amount)).toEqual([900, 660, 900, 660]);
      expect(c.rows.map((r) => [r.amount, r.prices, r.names])).toEqual([
        [900, '450', 'Seat B'],
        [660, '450,70', 'Seat B,Pin'],
        [900, '450', 'Seat B'],
        [660, '450,70', 'Seat B,Pin'],
      ]);
      expect(c.answers[1]!.lines?.map((l) => l.name)).toEqual(['Seat B', 'Pin']);
      // Nothing of the stale attempt is left: exactly the groups' orders, one stock request each.
      expect(await countRows(s.db, 'orders', "user_id LIKE 'qb4-%'")).toBe(12);
      expect(await countRows(s.db, 'idempotency_keys', "idempotency_key LIKE 'qb4-%'")).toBe(12);
      const ids = [...a.answers, ...b.answers, ...c.answers].map((x) => x.order_id);
      expect(await rowsOf('stock_requests_out', ids)).toBe(12);
      const d = await group('d');
      expect(reads).toBe(2);
      expect(d.answers.map((x) => x.amount)).toEqual([900, 660, 900, 660]);
    } finally {
      (s.deps.db as { query: unknown }).query = query;
    }
  });

  it('QA-04b control: with the remembered terms unchecked (orders.queued.stale-terms), the group after a price change writes and answers the old price', async () => {
    await createSku(s, { sku: 'qb4c', stock: 50, price: 300, name: 'Seat A' });
    const group = async (tag: string) => {
      const settled = await burst(
        [0, 1].map((i) => ({ user: `qb4c-${tag}-u${i}`, key: `qb4c-${tag}-k${i}`, body: { sku: 'qb4c' } })),
      );
      return settled.map((r) => {
        if (r.status !== 'fulfilled') throw r.reason;
        return (JSON.parse(r.value.body) as { amount: number }).amount;
      });
    };
    expect(await group('a')).toEqual([300, 300]); // the terms are read once and remembered
    const admin = await s.token(TENANT, 'ops', 'admin');
    expect((await s.call('PATCH', '/v1/admin/skus/qb4c', { token: admin, body: { price: 450 } })).status).toBe(200);
    const disarm = armMutation('orders.queued.stale-terms');
    try {
      expect(await group('b')).toEqual([300, 300]); // QA-04's check fires: sold at a price the SKU no longer has
    } finally {
      disarm();
    }
    expect(await group('c')).toEqual([450, 450]); // with the check: stale, read afresh, the new price
  });
});
