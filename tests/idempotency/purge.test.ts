import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeCompletedKeys } from '../../src/idempotency/idempotency.repo.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Proves the key purge is not capped per pass (it was 1,000 a minute): 60k expired keys go in one
// pass, batch by batch, while keys still in retention and keys in progress stay.
describe('idempotency key purge', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  const insert = (n: number, state: 'DONE' | 'PROCESSING', completedAt: string | null, prefix: string) =>
    db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, response_status, response_body, created_at, completed_at)
       SELECT 't', 'u', 'create_order', $1 || g, repeat('0', 64), $2, CASE WHEN $2 = 'DONE' THEN 201 END, CASE WHEN $2 = 'DONE' THEN '{}' END, now() - interval '9 days', $3::timestamptz
       FROM generate_series(1, $4::int) g`,
      [prefix, state, completedAt, n],
    );

  it('P-01: 60,000 expired keys purged in one pass; recent and in-progress keys kept', async () => {
    await insert(60_000, 'DONE', new Date(Date.now() - 8 * 24 * 3600_000).toISOString(), 'old-');
    await insert(500, 'DONE', new Date().toISOString(), 'new-');
    await insert(50, 'PROCESSING', null, 'busy-');
    const started = Date.now();
    const purged = await purgeCompletedKeys(db.pool, new Date(Date.now() - 7 * 24 * 3600_000));
    const rate = Math.round(purged / ((Date.now() - started) / 1000));
    console.log(`purge: ${purged} keys at ${rate} keys/s`);
    expect(purged).toBe(60_000);
    const left = await db.pool.query<{ state: string; n: number }>(
      'SELECT state, count(*)::int AS n FROM idempotency_keys GROUP BY state ORDER BY state',
    );
    expect(left.rows).toEqual([
      { state: 'DONE', n: 500 },
      { state: 'PROCESSING', n: 50 },
    ]);
  });
});
