import pg from 'pg';
import { invariant } from '../platform/errors.ts';
import type { Db } from '../platform/db.ts';

// A transaction in ONE round trip, for the outbox's hot statements (the relay's claim and mark, the
// consumer's batch apply). `inTx` costs four: BEGIN + timeouts, a SET LOCAL, the statement, COMMIT,
// and each one is a wait on a machine where the relays, the consumer and PostgreSQL share 2 cores.
// Several statements in one simple-protocol message run as one implicit transaction: SET LOCAL
// holds until its end, any error rolls all of it back, and the commit (durable unless `asyncCommit`)
// happens before the answer is sent. The simple protocol takes no parameters, so every value is
// inlined as a literal built here from a value that was checked or escaped.

export const literal = {
  text: (value: string): string => pg.escapeLiteral(value),
  texts: (values: readonly string[]): string => `ARRAY[${values.map((v) => pg.escapeLiteral(v)).join(',')}]::text[]`,
  int(value: number): string {
    invariant(Number.isSafeInteger(value), `not an integer: ${value}`);
    return String(value);
  },
  ints: (values: readonly number[], type: 'int' | 'bigint'): string =>
    `'{${values.map((v) => literal.int(v)).join(',')}}'::${type}[]`,
  /** toISOString throws on an invalid date and only ever yields digits, '-', ':', '.', 'T' and 'Z'. */
  time: (value: Date): string => `'${value.toISOString()}'::timestamptz`,
};

export interface OneTripOptions {
  lockTimeoutMs: number;
  statementTimeoutMs: number;
  /** synchronous_commit = off for this transaction only: only for writes whose loss a redelivery repairs. */
  asyncCommit?: boolean;
}

/** Runs `sql` (one statement, values inlined with `literal`) as its own transaction in one round trip. */
export async function oneTripTx<R extends pg.QueryResultRow>(
  db: Db,
  sql: string,
  options: OneTripOptions,
): Promise<pg.QueryResult<R>> {
  const settings =
    `SET LOCAL lock_timeout = ${literal.int(options.lockTimeoutMs)}; ` +
    `SET LOCAL statement_timeout = ${literal.int(options.statementTimeoutMs)}; ` +
    (options.asyncCommit ? 'SET LOCAL synchronous_commit = off; ' : '');
  // A multi-statement message answers one result per statement; the statement's is the last.
  const results = (await db.query(settings + sql)) as unknown as pg.QueryResult<R>[];
  const last = results[results.length - 1];
  invariant(last !== undefined, 'a one-trip transaction returned no result');
  return last;
}
