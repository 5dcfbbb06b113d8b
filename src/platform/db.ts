import pg from 'pg';
import { businessMetrics } from './business-metrics.ts';

// bigint counts (COUNT(*), SUM) come back as strings by default; every amount here fits a JS number.
pg.types.setTypeParser(20, (value) => Number(value));
pg.types.setTypeParser(1700, (value) => Number(value));

export type Db = pg.Pool;
/** A client inside BEGIN … COMMIT. The brand makes `lock*` functions uncallable outside a transaction. */
export type Tx = pg.PoolClient & { readonly __tx: unique symbol };
/** Anything that can run a statement: the pool (autocommit) or a transaction. */
export type Executor = Db | Tx;

// How long a request waits for a connection (a dry pool, a server that does not answer) before it
// is told 503 UNAVAILABLE: well under any client's deadline, well over a busy pool's normal wait.
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
// Client-side bound on one statement: a server that stopped answering (a partition, a frozen host)
// must not hold a request forever. Above the 30 s statement_timeout the server enforces itself.
const QUERY_TIMEOUT_MS = 35_000;

export function createPool(url: string, max: number, connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: QUERY_TIMEOUT_MS,
    keepAlive: true,
  });
  // An idle client whose backend died (pg_terminate_backend, server restart) must not crash us.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * The commit was sent but its answer was lost (the connection died): the transaction may or may
 * not have committed. Never "nothing was executed"; a keyed retry tells the client which.
 */
export class CommitOutcomeUnknownError extends Error {
  constructor(cause: unknown) {
    super(
      `the connection was lost during COMMIT; the outcome is unknown (${(cause as Error | null)?.message ?? String(cause)})`,
      { cause },
    );
  }
}

export interface TxOptions {
  isolation?: 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';
  lockTimeoutMs?: number;
  statementTimeoutMs?: number;
  /** Retries of serialization failures and deadlocks, the only errors worth retrying blindly. */
  retries?: number;
}

const RETRYABLE = new Set(['40001', '40P01']);
const MAX_RETRIES = 5;
const CONNECTION_RETRIES = 1;

/** The one transaction helper: explicit isolation and timeouts, bounded retry with jitter. */
export async function inTx<T>(db: Db, fn: (tx: Tx) => Promise<T>, options: TxOptions = {}): Promise<T> {
  const retries = Math.min(options.retries ?? 3, MAX_RETRIES);
  for (let attempt = 0; ; attempt++) {
    const client = await db.connect();
    let broken = false;
    let committing = false;
    let released = false;
    // A checked-out client has no pool listener: without ours, a backend killed between two
    // statements (pg_terminate_backend, a server restart) is an unhandled 'error' that ends the
    // process. With it, only this transaction fails, and the client is discarded on release.
    const onError = () => {
      broken = true;
    };
    client.on('error', onError);
    try {
      // One round trip: the timeouts are integers we format, never caller-supplied text.
      const lockMs = Math.trunc(options.lockTimeoutMs ?? 5_000);
      const statementMs = Math.trunc(options.statementTimeoutMs ?? 30_000);
      await client.query(
        `BEGIN ISOLATION LEVEL ${options.isolation ?? 'READ COMMITTED'}; SET LOCAL lock_timeout = ${lockMs}; SET LOCAL statement_timeout = ${statementMs}`,
      );
      const result = await fn(client as Tx);
      committing = true;
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (committing && isConnectionError(error)) {
        broken = true;
        throw new CommitOutcomeUnknownError(error);
      }
      if (broken || isConnectionError(error)) {
        // Nothing committed on a connection that died before COMMIT: one more try on a fresh
        // connection absorbs a killed backend; a server that is gone fails the retry at once.
        broken = true;
        if (attempt < CONNECTION_RETRIES) {
          businessMetrics.txRetries.inc({ code: 'connection' });
          client.removeListener('error', onError);
          client.release(true);
          released = true;
          continue;
        }
        throw error;
      }
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      const code = (error as { code?: string }).code;
      if (code !== undefined && RETRYABLE.has(code) && attempt < retries) {
        businessMetrics.txRetries.inc({ code });
        await sleep(5 * 2 ** attempt + Math.random() * 10);
        continue;
      }
      throw error;
    } finally {
      if (!released) {
        client.removeListener('error', onError);
        client.release(broken);
      }
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function pgCode(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}

/** Errors that mean "the database could not be reached", as opposed to a bug in a statement. */
export function isConnectionError(error: unknown): boolean {
  const code = pgCode(error);
  if (code && (code.startsWith('08') || code === '57P01' || code === '57P03' || code === '53300')) return true;
  const message = (error as Error | null)?.message ?? '';
  return /ECONNREFUSED|ECONNRESET|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

/**
 * lock_timeout or statement_timeout fired, or a serialization failure / deadlock outlived its
 * retries: the transaction rolled back because the database is busy. Never a 500.
 */
export function isBusyError(error: unknown): boolean {
  const code = pgCode(error);
  return code === '55P03' || code === '57014' || code === '40001' || code === '40P01';
}

/** A fault of the database, not of the statement: unreachable, busy, or a commit whose answer was lost. */
export function isDatabaseFault(error: unknown): boolean {
  return error instanceof CommitOutcomeUnknownError || isConnectionError(error) || isBusyError(error);
}
