import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeKeyed, type KeyedDeps } from '../../src/idempotency/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

const DIGEST = 'a'.repeat(64);

// The key's claim rides in BEGIN's simple-query round trip and its completion in COMMIT's, with
// values inlined as literals: hostile text must round-trip byte for byte, and a completion that
// fails must keep the COMMIT after it from running (the effect and the key are one fact).
describe('idempotency: claim and completion folded into BEGIN and COMMIT', () => {
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

  it('IK-02: a completion that finds its key not PROCESSING fails, and the effect before it is not committed', async () => {
    const key = 'broken-invariant';
    const op = {
      scope: scope(key),
      digest: DIGEST,
      start: async (tx: import('../../src/platform/db.ts').Tx) => {
        // The effect: another row. Then the key is made DONE behind the layer's back.
        await tx.query(
          `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, created_at)
           VALUES ('t', 'u', 'fold_test', 'effect-marker', '${DIGEST}', 'PROCESSING', now())`,
        );
        await tx.query(
          `UPDATE idempotency_keys SET state = 'DONE', response_status = 200, response_body = '{}' WHERE operation = 'fold_test' AND idempotency_key = $1`,
          [key],
        );
        return { final: { status: 201, body: '{}' } };
      },
    };
    await expect(executeKeyed(deps, op)).rejects.toMatchObject({ code: '22012' });
    expect(await keys(key)).toEqual([]);
    expect(await keys('effect-marker')).toEqual([]);
  });
});
