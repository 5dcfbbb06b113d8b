import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedTransactions } from '../../src/platform/shared-tx.ts';
import type { Tx } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// sharedTransactions (src/platform/shared-tx.ts): writes that arrive while one commits share the
// next transaction, and each is committed when its promise resolves. A failing member costs the
// others nothing: the group rolls back and each runs again alone.

describe('sharedTransactions: small independent writes, one commit per burst', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ migrated: false, poolSize: 4 });
    await db.pool.query('CREATE TABLE st_rows (n int PRIMARY KEY, xid text NOT NULL)');
  });
  afterAll(async () => db.drop());

  /** Inserts `n` with the id of the transaction it ran in; answers that id. */
  const insert = (n: number) => async (tx: Tx) =>
    (
      await tx.query<{ xid: string }>(
        'INSERT INTO st_rows (n, xid) VALUES ($1, pg_current_xact_id()::text) RETURNING xid',
        [n],
      )
    ).rows[0]!.xid;
  const rows = async (from: number, to: number) =>
    (
      await db.pool.query<{ n: number; xid: string }>(
        'SELECT n, xid FROM st_rows WHERE n BETWEEN $1 AND $2 ORDER BY n',
        [from, to],
      )
    ).rows;

  it('ST-01 ten writes at once: the first alone, the nine behind it in one transaction; each visible when it resolves', async () => {
    const shared = sharedTransactions(db.pool);
    const seen: boolean[] = [];
    const xids = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        shared.run(insert(100 + i)).then(async (xid) => {
          // Committed by then: another connection reads it.
          seen.push((await rows(100 + i, 100 + i)).length === 1);
          return xid;
        }),
      ),
    );
    expect(new Set(xids.slice(1)).size).toBe(1);
    expect(xids[0]).not.toBe(xids[1]);
    expect(seen).toEqual(Array(10).fill(true));
    expect((await rows(100, 109)).map((r) => r.xid)).toEqual(xids);
  });

  it('ST-02 a member that fails: the group rolls back, the others commit alone, the failing one meets its own error and wrote nothing', async () => {
    const shared = sharedTransactions(db.pool);
    const first = shared.run(insert(200)); // goes alone; the next four wait behind it and share one group
    const failing = async (tx: Tx) => {
      await tx.query('INSERT INTO st_rows (n, xid) VALUES (202, $1)', ['written before the error']);
      await tx.query('SELECT 1 / 0');
    };
    const outcomes = await Promise.allSettled([
      first,
      shared.run(insert(201)),
      shared.run(failing),
      shared.run(insert(203)),
      shared.run(insert(204)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: '22012' });
    const written = await rows(200, 209);
    expect(written.map((r) => r.n)).toEqual([200, 201, 203, 204]);
    // Alone: each of the three others in a transaction of its own.
    expect(new Set(written.slice(1).map((r) => r.xid)).size).toBe(3);
  });
});
