import type { Db } from './db.ts';

// Jobs that must run in one process at a time however many share the database (reconciliation):
// a session-level advisory lock on a connection held for the job. A process that dies loses its
// session and so its lock; nobody has to sweep it. Lock keys are named here, one per job.
export const SINGLETON_LOCKS = { reconciliation: 0x7ec0_0001 } as const;

/** Runs `fn` when no other process holds the job's lock; otherwise skips and returns undefined. */
export async function runAsSingleton<T>(db: Db, lock: number, fn: () => Promise<T>): Promise<T | undefined> {
  const client = await db.connect();
  try {
    const taken = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [lock]);
    if (!taken.rows[0]?.ok) return undefined;
    try {
      return await fn();
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [lock]);
    }
  } finally {
    client.release();
  }
}
