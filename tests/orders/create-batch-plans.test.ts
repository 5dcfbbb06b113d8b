import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buyBatched } from '../support/create-batch.ts';
import { createSku, TENANT } from '../support/fixtures.ts';
import { flushStats, settled } from '../support/pg-stats.ts';
import { startStack, type Stack } from '../support/stack.ts';

// A set-based statement must stay a primary-key probe per buyer however the table grew after the
// process started. PostgreSQL caches a named statement's generic plan after five executions, and
// plans it with the sizes of that moment: made while idempotency_keys was small, the batch's key
// completion read every key of the tenant (an index scan on the tenant alone), and went on doing
// so on every batch as the table grew: the bench's uncontended run fell to 0.1x the naive route.
// So these statements are sent unnamed (planned with each batch's real sizes) or are written as
// LATERAL probes; this proves it by the index entries a batch reads, from PostgreSQL's counters.

const KEYS_ALREADY_THERE = 30_000;

describe('the transactional batch on a keys table that grew under its cached plans', () => {
  let base: Stack;
  let stack: Stack;
  let pool: pg.Pool;
  beforeAll(async () => {
    base = await startStack();
    // One connection: every statement below runs on the connection that cached its plans.
    pool = new pg.Pool({ connectionString: base.db.url, max: 1 });
    stack = await startStack({ db: { ...base.db, pool } });
  });
  afterAll(async () => {
    await stack.close();
    await pool.end();
    await base.close();
  });

  // Index entries read from the keys' indexes (the primary key, or the console's (key, tenant) search
  // index when the planner prefers it), once this database's counters have them
  // (each backend reports its counters when it goes idle, about once a second).
  async function keyEntriesRead(): Promise<number> {
    await flushStats(pool);
    return settled(async () =>
      Number(
        (
          await base.db.pool.query<{ n: string }>(
            `SELECT sum(idx_tup_read) AS n FROM pg_stat_user_indexes
             WHERE indexrelname IN ('idempotency_keys_pkey', 'idempotency_keys_key_tenant')`,
          )
        ).rows[0]!.n,
      ),
    );
  }

  it('PLAN-01 a batch reads about one key entry per buyer, with 30,000 keys of its tenant added after the plans were made', async () => {
    // A per-user limit keeps every batch of the SKU on the transactional path (claim, apply, complete).
    await createSku(stack, { sku: 'plans', stock: 1_000, per_user_limit: 1 });
    for (let i = 0; i < 8; i++)
      expect((await buyBatched(stack, TENANT, `early${i}`, `pl-early-${i}`, 'plans')).status).toBe(201);

    await base.db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state,
                                     response_status, response_body, created_at, completed_at)
       SELECT $1, 'crowd' || (g % 500), 'create_order', 'pl-crowd-' || g, repeat('0', 64), 'DONE', 201, '{}', now(), now()
       FROM generate_series(1, $2::int) AS g`,
      [TENANT, KEYS_ALREADY_THERE],
    );

    const before = await keyEntriesRead();
    const buyers = Array.from({ length: 20 }, (_, i) => `late${i}`);
    const granted = await Promise.all(buyers.map((u, i) => buyBatched(stack, TENANT, u, `pl-late-${i}`, 'plans')));
    expect(granted.map((a) => a.status)).toEqual(buyers.map(() => 201));
    // The same buyers again, over their limit: a batch of refusals completes its keys only.
    const refused = await Promise.all(buyers.map((u, i) => buyBatched(stack, TENANT, u, `pl-again-${i}`, 'plans')));
    expect(refused.map((a) => JSON.parse(a.body).code)).toEqual(buyers.map(() => 'USER_LIMIT'));
    const read = (await keyEntriesRead()) - before;

    // 40 buyers: each is probed when claimed and again when completed. A scan of the tenant's
    // keys would read 30,000 entries per batch.
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(1_000);
    const keys = await base.db.pool.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM idempotency_keys WHERE idempotency_key LIKE 'pl-late-%' OR idempotency_key LIKE 'pl-again-%' GROUP BY state`,
    );
    expect(keys.rows).toEqual([{ state: 'DONE', n: 40 }]);
  }, 60_000);
});
