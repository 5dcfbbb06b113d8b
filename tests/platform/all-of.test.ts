import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOf, inTx, type Executor } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// allOf (src/platform/db.ts): statements of one transaction sent together only where that is safe.
// On a pipelined transaction they are all in flight at once and run in the order given; on one
// that is not, one after another (pg queues overlapping calls on a client, deprecated, and pg 9
// refuses them); on the pool, at once on separate connections. A failure is the error, and it
// rolls the transaction back. On a pipelined transaction the calls' statements also leave in one
// write: on this kind of VM a write to loopback is a wake-up of the backend, and it was the pays'
// groups' main cost after their round trips (docs/benchmarks/journal.md §19).

describe('allOf: calls without a round trip each, where safe', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ poolSize: 8 });
    await db.pool.query('CREATE TABLE ao_log (n int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())');
  });
  afterAll(async () => db.drop());

  /** Five calls that each insert their number: the most that were in flight at once, and the order they ran in. */
  async function five(ex: Executor, tag: number) {
    let active = 0;
    let most = 0;
    const results = await allOf(
      ex,
      [1, 2, 3, 4, 5].map((n) => async () => {
        most = Math.max(most, ++active);
        await ex.query('INSERT INTO ao_log (n) VALUES ($1)', [tag + n]);
        active--;
        return n;
      }),
    );
    return { results, most };
  }
  const ran = async (tag: number) =>
    (
      await db.pool.query<{ n: number }>('SELECT n FROM ao_log WHERE n > $1 AND n < $1 + 10 ORDER BY at, n', [tag])
    ).rows.map((r) => r.n - tag);

  it('AO-01 pipelined: all five in flight at once, run in the order given; not pipelined: one at a time; the pool: at once', async () => {
    const piped = await inTx(db.pool, (tx) => five(tx, 100), { pipeline: true });
    expect(piped).toEqual({ results: [1, 2, 3, 4, 5], most: 5 });
    expect(await ran(100)).toEqual([1, 2, 3, 4, 5]);
    const plain = await inTx(db.pool, (tx) => five(tx, 200));
    expect(plain).toEqual({ results: [1, 2, 3, 4, 5], most: 1 });
    expect(await ran(200)).toEqual([1, 2, 3, 4, 5]);
    expect((await five(db.pool, 300)).most).toBe(5);
  });

  it('AO-02 a failing call fails the transaction and nothing of it is written', async () => {
    for (const pipeline of [true, false]) {
      const tag = pipeline ? 400 : 500;
      const failed = await inTx(
        db.pool,
        (tx) =>
          allOf(tx, [
            () => tx.query('INSERT INTO ao_log (n) VALUES ($1)', [tag + 1]),
            () => tx.query('INSERT INTO ao_log (n) VALUES ($1)', ['not a number']),
            () => tx.query('INSERT INTO ao_log (n) VALUES ($1)', [tag + 3]),
          ]),
        { pipeline },
      ).catch((e: unknown) => e);
      expect((failed as { code?: string }).code).toBe('22P02');
      expect(await ran(tag)).toEqual([]);
    }
  });

  /** The writes `fn` makes on the transaction's socket (one per syscall: write or writev). */
  async function writesOf<T>(pipeline: boolean, fn: (tx: Executor) => Promise<T>): Promise<{ out: T; writes: number }> {
    return inTx(
      db.pool,
      async (tx) => {
        await tx.query('SELECT 1'); // BEGIN has left and been answered
        type Sink = { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
        const socket = (tx as unknown as { connection: { stream: Sink } }).connection.stream;
        const [write, writev] = [socket._write, socket._writev];
        let writes = 0;
        socket._write = (...a) => (writes++, write.apply(socket, a));
        socket._writev = (...a) => (writes++, writev.apply(socket, a));
        try {
          const out = await fn(tx);
          return { out, writes };
        } finally {
          [socket._write, socket._writev] = [write, writev];
        }
      },
      { pipeline },
    );
  }

  it('AO-03 pipelined: the statements the calls send at once leave in one write; not pipelined: one write each', async () => {
    const three = (tx: Executor) =>
      allOf(
        tx,
        [1, 2, 3].map((n) => async () => (await tx.query<{ n: number }>('SELECT $1::int AS n', [n])).rows[0]?.n),
      );
    expect(await writesOf(true, three)).toEqual({ out: [1, 2, 3], writes: 1 });
    expect(await writesOf(false, three)).toEqual({ out: [1, 2, 3], writes: 3 });
    // A call's statements after its first await are not held back: they leave when sent.
    const chained = (tx: Executor) =>
      allOf(tx, [
        async () => {
          await tx.query('SELECT 1');
          return (await tx.query<{ n: number }>('SELECT 2 AS n')).rows[0]?.n;
        },
        async () => (await tx.query<{ n: number }>('SELECT 3 AS n')).rows[0]?.n,
      ]);
    expect(await writesOf(true, chained)).toEqual({ out: [2, 3], writes: 2 });
  });
});
