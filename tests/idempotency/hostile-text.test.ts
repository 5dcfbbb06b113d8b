import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeKeyed, type KeyedDeps } from '../../src/idempotency/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

const DIGEST = 'a'.repeat(64);

// Keys, scopes and stored answers are client text: quotes, backslashes and `$n` must be stored and
// replayed byte for byte, executed once (a guard for any statement that ever inlines them; the
// issue-16 P5 attempt that folded the claim into BEGIN's simple query did).
describe('idempotency: hostile text in keys and answers', () => {
  let db: TestDatabase;
  let deps: KeyedDeps;
  beforeAll(async () => {
    db = await freshDatabase({ poolSize: 4 });
    deps = { db: db.pool, clock: systemClock, waitMs: 1_000, leaseMs: 30_000 };
  });
  afterAll(async () => {
    await db.drop();
  });

  const scope = (key: string) => ({ tenantId: "t'\\x", userId: 'u$1', operation: 'fold_test', key });
  const keys = async (key: string) =>
    (
      await db.pool.query<{ state: string; response_body: string | null }>(
        `SELECT state, response_body FROM idempotency_keys WHERE operation = 'fold_test' AND idempotency_key = $1`,
        [key],
      )
    ).rows;

  it('IK-01: quotes, backslashes and $n in key, scope and body are stored and replayed exactly, once', async () => {
    const key = `k'\\$1"--;`;
    const body = JSON.stringify({ text: `it's \\ $2 ${'\u0000'} '); DROP TABLE orders; --` });
    let runs = 0;
    const op = {
      scope: scope(key),
      digest: DIGEST,
      start: async () => {
        runs += 1;
        return { final: { status: 201, body, location: "/v1/o'1" } };
      },
    };
    const first = await executeKeyed(deps, op);
    const second = await executeKeyed(deps, op);
    expect(runs).toBe(1);
    expect(first).toEqual({ status: 201, body, location: "/v1/o'1", replayed: false });
    expect(second).toEqual({ ...first, replayed: true });
    expect(await keys(key)).toEqual([{ state: 'DONE', response_body: body }]);
  });
});
