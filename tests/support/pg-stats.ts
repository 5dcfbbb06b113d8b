import type { Executor } from '../../src/platform/db.ts';

// Counting what a statement read, from PostgreSQL's own statistics (pg_stat_user_tables and
// pg_stat_user_indexes): the plan tests (PLAN-01, LP-01, Q-10) prove a scan did not happen by it.

/**
 * Makes the connection behind `db` (a pool of one) report its counters at once. Left alone, an
 * idle backend may report them only about 10 s later, and a count read before then says "nothing
 * read" for a statement that read everything.
 */
export async function flushStats(db: Executor): Promise<void> {
  await db.query('SELECT pg_stat_force_next_flush()');
  await db.query('SELECT 1');
}

/** Rows read from these tables (by a scan; with `withIndex`, through an index as well), once the count stops moving. */
export async function rowsRead(db: Executor, tables: readonly string[], withIndex = false): Promise<number> {
  return settled(async () =>
    Number(
      (
        await db.query<{ n: string | null }>(
          `SELECT sum(coalesce(seq_tup_read, 0) + CASE WHEN $2 THEN coalesce(idx_tup_fetch, 0) ELSE 0 END) AS n
           FROM pg_stat_user_tables WHERE relname = ANY($1)`,
          [tables, withIndex],
        )
      ).rows[0]?.n ?? 0,
    ),
  );
}

/** A counter read until three reads 0.7 s apart agree (other backends report about once a second). */
export async function settled(read: () => Promise<number>): Promise<number> {
  let last = await read();
  for (let stable = 0; stable < 3;) {
    await new Promise((resolve) => setTimeout(resolve, 700));
    const now = await read();
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
  return last;
}
