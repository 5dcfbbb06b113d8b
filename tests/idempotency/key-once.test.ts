import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeKeyedNow, type KeyedDeps, type KeyedOperation } from '../../src/idempotency/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { AppError } from '../../src/platform/errors.ts';
import type { Db, Tx } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { createSku, placeOrder, TENANT } from '../support/fixtures.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { everyOf } from '../support/every.ts';

const DIGEST = 'c'.repeat(64);
const OTHER_DIGEST = 'd'.repeat(64);

// Issue 16, P5: an operation whose answer is known before its commit writes its key once, DONE,
// with the COMMIT (idempotency.once.ts). The contract is the insert-first claim's: one effect per
// key, every request with it gets the first answer, a different request with it is refused, a key
// another request holds is REQUEST_IN_PROGRESS. A trigger counts what touches the key table.
/** Every INSERT and UPDATE of a key row, recorded by a trigger in the writing transaction. */
async function countKeyWrites(db: Db): Promise<void> {
  await db.query(`
    CREATE TABLE ko_key_writes (op text NOT NULL, operation text NOT NULL, key text NOT NULL);
    CREATE FUNCTION ko_count() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ko_key_writes VALUES (TG_OP, NEW.operation, NEW.idempotency_key); RETURN NEW; END $$;
    CREATE TRIGGER ko_count BEFORE INSERT OR UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION ko_count();`);
}

describe('idempotency: the key of a final-only operation, written once', () => {
  let db: TestDatabase;
  let deps: KeyedDeps;
  beforeAll(async () => {
    db = await freshDatabase({ poolSize: 20 });
    deps = { db: db.pool, clock: systemClock, waitMs: 5_000, leaseMs: 30_000 };
    await db.pool.query('CREATE TABLE ko_effects (key text NOT NULL)');
    await countKeyWrites(db.pool);
  });
  afterAll(async () => {
    await db.drop();
  });

  const effects = (key: string) => countRows(db, 'ko_effects', 'key = $1', [key]);
  // Writes that committed: a rolled-back INSERT rolls its trigger's row back with it.
  const writes = (key: string, op: 'INSERT' | 'UPDATE') =>
    countRows(db, 'ko_key_writes', 'key = $1 AND op = $2', [key, op]);
  let starts = 0;

  function op(key: string, options: { digest?: string; sleep?: number; fail?: boolean } = {}): KeyedOperation {
    return {
      scope: { tenantId: 't', userId: 'u', operation: 'ko_test', key },
      digest: options.digest ?? DIGEST,
      finalOnly: true,
      start: async (tx: Tx) => {
        starts++;
        await tx.query(`INSERT INTO ko_effects (key) SELECT $1 FROM pg_sleep($2)`, [key, options.sleep ?? 0]);
        if (options.fail) throw new AppError('VALIDATION', 'refused after the effect');
        return { final: { status: 201, body: JSON.stringify({ key, digest: options.digest ?? DIGEST }) } };
      },
    };
  }

  it('KO-01: a first call leaves one key row, DONE with its answer, from one INSERT and no UPDATE', async () => {
    const answer = await executeKeyedNow(deps, op('first'));
    expect(answer).toMatchObject({ status: 201, replayed: false });
    const rows = await db.pool.query(
      `SELECT state, response_status, response_body, completed_at IS NOT NULL AS completed, locked_until FROM idempotency_keys WHERE idempotency_key = 'first'`,
    );
    expect(rows.rows).toEqual([
      { state: 'DONE', response_status: 201, response_body: answer.body, completed: true, locked_until: null },
    ]);
    expect(await effects('first')).toBe(1);
    expect([await writes('first', 'INSERT'), await writes('first', 'UPDATE')]).toEqual([1, 0]);
  });

  it('KO-02: a replay runs nothing and writes nothing; it answers the stored bytes', async () => {
    const first = await executeKeyedNow(deps, op('again'));
    const before = starts;
    const replays = await Promise.all(Array.from({ length: 5 }, () => executeKeyedNow(deps, op('again'))));
    expect(starts).toBe(before);
    expect(everyOf(replays, (r) => r.replayed && r.body === first.body && r.status === 201)).toBe(true);
    expect(await effects('again')).toBe(1);
    expect([await writes('again', 'INSERT'), await writes('again', 'UPDATE')]).toEqual([1, 0]);
  });

  it('KO-03: 16 concurrent requests with one key, as from 16 processes: every one runs, one effect commits, all answer it', async () => {
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => executeKeyedNow(deps, op('twins', { sleep: 0.05 }))),
    );
    expect(await effects('twins')).toBe(1);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
    expect([await writes('twins', 'INSERT'), await writes('twins', 'UPDATE')]).toEqual([1, 0]);
  });

  it('KO-04: the same key with a different request is refused, alone or at once with the first, and its effect rolled back', async () => {
    const [first, second] = await Promise.allSettled([
      executeKeyedNow(deps, op('reused', { sleep: 0.1 })),
      executeKeyedNow(deps, op('reused', { digest: OTHER_DIGEST, sleep: 0.1 })),
    ]);
    const outcomes = [first, second].map((s) =>
      s.status === 'fulfilled' ? s.value.status : (s.reason as AppError).code,
    );
    expect(outcomes.sort()).toEqual([201, 'IDEMPOTENCY_KEY_REUSED'].sort());
    const winner = first.status === 'fulfilled' ? DIGEST : OTHER_DIGEST;
    const loser = winner === DIGEST ? OTHER_DIGEST : DIGEST;
    await expect(executeKeyedNow(deps, op('reused', { digest: loser }))).rejects.toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
    expect(await effects('reused')).toBe(1);
    const stored = await db.pool.query(`SELECT request_digest FROM idempotency_keys WHERE idempotency_key = 'reused'`);
    expect(stored.rows).toEqual([{ request_digest: winner }]);
  });

  it('KO-05: a key another transaction holds past waitMs is REQUEST_IN_PROGRESS, with nothing of this request kept', async () => {
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query(`BEGIN; INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, locked_until, created_at)
                          VALUES ('t', 'u', 'ko_test', 'held', '${DIGEST}', 'PROCESSING', now() + interval '1 minute', now())`);
      await expect(executeKeyedNow({ ...deps, waitMs: 300 }, op('held'))).rejects.toMatchObject({
        code: 'REQUEST_IN_PROGRESS',
      });
      expect(await effects('held')).toBe(0);
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
    // The holder gave the key up: the next request runs and keeps its effect.
    expect(await executeKeyedNow(deps, op('held'))).toMatchObject({ status: 201, replayed: false });
    expect(await effects('held')).toBe(1);
  });

  it('KO-06: an operation that throws after its effect leaves no key and no effect; the key is free for a retry', async () => {
    await expect(executeKeyedNow(deps, op('thrown', { fail: true }))).rejects.toMatchObject({ code: 'VALIDATION' });
    expect(await effects('thrown')).toBe(0);
    expect(await countRows(db, 'idempotency_keys', `idempotency_key = 'thrown'`)).toBe(0);
    expect(await executeKeyedNow(deps, op('thrown'))).toMatchObject({ status: 201, replayed: false });
    expect(await effects('thrown')).toBe(1);
  });

  it('KO-08: a prefetch leaves with the key read; for an earlier key its refusal is awaited by nobody, and the replay answers', async () => {
    const first = await executeKeyedNow(deps, op('prefetched'));
    const before = starts;
    let prefetched = 0;
    // As readSkusAtOnce does for a SKU that is gone: the read succeeds, the prefetch's promise refuses.
    const refusing: KeyedOperation = {
      ...op('prefetched'),
      prefetch(tx) {
        prefetched++;
        const read = tx.query('SELECT 1').then(() => {
          throw new AppError('SKU_NOT_FOUND', 'gone');
        });
        read.catch(() => undefined);
      },
    };
    expect(await executeKeyedNow(deps, refusing)).toMatchObject({ replayed: true, status: 201, body: first.body });
    expect(prefetched).toBe(1);
    expect(starts).toBe(before);
    expect(await effects('prefetched')).toBe(1);
  });
});

describe('idempotency: a several-line order over HTTP writes its key once', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
    await countKeyWrites(s.db.pool);
  });
  afterAll(async () => {
    await s.close();
  });

  it('KO-07: two lines, the same key twice: one order, both units held once, the replay byte for byte, no key UPDATE', async () => {
    await createSku(s, { sku: 'ko-a', stock: 3 });
    await createSku(s, { sku: 'ko-b', stock: 3 });
    const alice = await s.token(TENANT, 'alice');
    const body = {
      lines: [
        { sku: 'ko-a', quantity: 1 },
        { sku: 'ko-b', quantity: 2 },
      ],
    };
    const first = await placeOrder(s, alice, 'ko-lines', body);
    const again = await placeOrder(s, alice, 'ko-lines', body);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await countRows(s.db, 'orders', `user_id = 'alice'`)).toBe(1);
    const skus = await s.db.pool.query(`SELECT sku, available, held FROM skus WHERE sku LIKE 'ko-%' ORDER BY sku`);
    expect(skus.rows).toEqual([
      { sku: 'ko-a', available: 2, held: 1 },
      { sku: 'ko-b', available: 1, held: 2 },
    ]);
    const keyWrites = await s.db.pool.query(
      `SELECT op, count(*)::int AS n FROM ko_key_writes WHERE operation = 'create_order' GROUP BY op`,
    );
    expect(keyWrites.rows).toEqual([{ op: 'INSERT', n: 1 }]);
  });
});
