import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeKeyedNow, type KeyedDeps, type KeyedOperation } from '../../src/idempotency/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { CommitOutcomeUnknownError, inTx, sendWithCommit, type Tx } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

const DIGEST = 'b'.repeat(64);

// Issue 16, P5: the key's claim rides with BEGIN and its completion with COMMIT (pipelined). The
// COMMIT is on the wire before the completion's answer arrives, so the completion must fail in SQL
// when it completed nothing, and the contract must hold exactly as on the awaited path.
describe('idempotency: the pipelined claim transaction', () => {
  let db: TestDatabase;
  let deps: KeyedDeps;
  beforeAll(async () => {
    db = await freshDatabase({ poolSize: 8 });
    deps = { db: db.pool, clock: systemClock, waitMs: 5_000, leaseMs: 30_000 };
    await db.pool.query('CREATE TABLE pl_effects (key text NOT NULL, note text)');
  });
  afterAll(async () => {
    await db.drop();
  });

  const count = async (sql: string, values: unknown[]) =>
    (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, values)).rows[0]?.n ?? -1;
  const effects = (key: string) => count('pl_effects WHERE key = $1', [key]);
  const keyRows = (key: string) =>
    count(`idempotency_keys WHERE operation = 'pl_test' AND idempotency_key = $1`, [key]);

  function op(key: string, extra?: (tx: Tx) => Promise<void>): KeyedOperation {
    return {
      scope: { tenantId: 't', userId: 'u', operation: 'pl_test', key },
      digest: DIGEST,
      start: async (tx) => {
        // Long enough for every twin to be queued on the key row meanwhile.
        await tx.query(`INSERT INTO pl_effects (key) SELECT $1 FROM pg_sleep(0.05)`, [key]);
        if (extra) await extra(tx);
        return { final: { status: 201, body: JSON.stringify({ key, at: Date.now() }) } };
      },
    };
  }

  it('PL-01: 16 concurrent requests with one key, as from 16 processes: the effect runs once, all get its answer', async () => {
    const answers = await Promise.all(Array.from({ length: 16 }, () => executeKeyedNow(deps, op('twins'))));
    expect(await effects('twins')).toBe(1);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
    const stored = await db.pool.query(`SELECT state FROM idempotency_keys WHERE idempotency_key = 'twins'`);
    expect(stored.rows).toEqual([{ state: 'DONE' }]);
  });

  it('PL-02: a completion that completes no row fails itself: the COMMIT on the wire rolls the effect back', async () => {
    // The key row is gone inside the transaction: the guarded completion matches nothing.
    const sabotage = async (tx: Tx) => {
      await tx.query(`DELETE FROM idempotency_keys WHERE operation = 'pl_test' AND idempotency_key = 'lost'`);
    };
    await expect(executeKeyedNow(deps, op('lost', sabotage))).rejects.toThrow(/division by zero/);
    expect(await effects('lost')).toBe(0);
    expect(await keyRows('lost')).toBe(0);
    // The key is free again: a retry runs the effect once and completes it.
    const retry = await executeKeyedNow(deps, op('lost'));
    expect(retry.replayed).toBe(false);
    expect(await effects('lost')).toBe(1);
    expect(await count(`idempotency_keys WHERE idempotency_key = 'lost' AND state = 'DONE'`, [])).toBe(1);
  });

  it('PL-03: a statement sent with COMMIT that fails leaves nothing committed; the client leaves pipeline mode', async () => {
    const one = await freshDatabase({ poolSize: 1 });
    try {
      await one.pool.query('CREATE TABLE t (id int PRIMARY KEY)');
      await one.pool.query('INSERT INTO t VALUES (1)');
      const failing = inTx(
        one.pool,
        async (tx) => {
          await tx.query('INSERT INTO t VALUES (2)');
          sendWithCommit(tx, { text: 'INSERT INTO t VALUES (1)' }); // duplicate key
        },
        { pipeline: true },
      );
      await expect(failing).rejects.toMatchObject({ code: '23505' });
      const ok = await inTx(
        one.pool,
        async (tx) => {
          const first = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM t');
          sendWithCommit(tx, { text: 'INSERT INTO t VALUES (3)' });
          return first.rows[0]?.n;
        },
        { pipeline: true },
      );
      expect(ok).toBe(1);
      const client = await one.pool.connect();
      try {
        expect((client as unknown as { pipeline: boolean }).pipeline).toBe(false);
        const ids = await client.query<{ id: number }>('SELECT id FROM t ORDER BY id');
        expect(ids.rows.map((r) => r.id)).toEqual([1, 3]);
      } finally {
        client.release();
      }
    } finally {
      await one.drop();
    }
  });

  it('PL-04: the connection dies with COMMIT on the wire: outcome unknown, nothing committed, the pool goes on', async () => {
    const dying = inTx(
      db.pool,
      async (tx) => {
        await tx.query(`INSERT INTO pl_effects (key) VALUES ('killed')`);
        sendWithCommit(tx, { text: 'SELECT pg_terminate_backend(pg_backend_pid())' });
      },
      { pipeline: true },
    );
    await expect(dying).rejects.toBeInstanceOf(CommitOutcomeUnknownError);
    expect(await effects('killed')).toBe(0);
    const after = await executeKeyedNow(deps, op('after-kill'));
    expect(after.replayed).toBe(false);
    expect(await effects('after-kill')).toBe(1);
  });
});
