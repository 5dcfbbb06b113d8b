import type { Db } from './db.ts';

// Jobs that must run in one process at a time however many share the database (reconciliation):
// a transaction-level advisory lock (pg_try_advisory_xact_lock) in a transaction held open on a
// connection of its own for the job. A process that dies loses its connection, its transaction and
// so its lock; nobody has to sweep it. It is a transaction, not a session lock, so that it holds
// behind PgBouncer in transaction mode too: the pooler keeps a transaction on one backend, while a
// session lock stays on whichever backend took it and is seen as free (re-entrant) by the next
// client handed that backend (tests/cluster/pgbouncer.test.ts, PB-06). The transaction only takes
// the lock: READ COMMITTED, no snapshot kept between statements, so it holds back no vacuum.
// Lock keys are named here, one per job.
export const SINGLETON_LOCKS = { reconciliation: 0x7ec0_0001 } as const;

/** Runs `fn` when no other process holds the job's lock; otherwise skips and returns undefined. */
export async function runAsSingleton<T>(db: Db, lock: number, fn: () => Promise<T>): Promise<T | undefined> {
  const client = await db.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const taken = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [lock]);
    if (!taken.rows[0]?.ok) return undefined;
    return await fn();
  } finally {
    // COMMIT ends the transaction and so releases the lock; a connection that failed is not reused.
    await client.query('COMMIT').catch(() => (broken = true));
    client.release(broken);
  }
}
