import pg from 'pg';

// bigint counts (COUNT(*), SUM) come back as strings by default; every amount here fits a JS number.
pg.types.setTypeParser(20, (value) => Number(value));
pg.types.setTypeParser(1700, (value) => Number(value));

export type Db = pg.Pool;
/** A client inside BEGIN … COMMIT. The brand makes `lock*` functions uncallable outside a transaction. */
export type Tx = pg.PoolClient & { readonly __tx: unique symbol };
/** Anything that can run a statement: the pool (autocommit) or a transaction. */
export type Executor = Db | Tx;

export function createPool(url: string, max: number): Db {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000 });
  // An idle client whose backend died (pg_terminate_backend, server restart) must not crash us.
  pool.on('error', () => undefined);
  return pool;
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

/** The one transaction helper: explicit isolation and timeouts, bounded retry with jitter. */
export async function inTx<T>(db: Db, fn: (tx: Tx) => Promise<T>, options: TxOptions = {}): Promise<T> {
  const retries = Math.min(options.retries ?? 3, MAX_RETRIES);
  for (let attempt = 0; ; attempt++) {
    const client = await db.connect();
    let broken = false;
    try {
      // One round trip: the timeouts are integers we format, never caller-supplied text.
      const lockMs = Math.trunc(options.lockTimeoutMs ?? 5_000);
      const statementMs = Math.trunc(options.statementTimeoutMs ?? 30_000);
      await client.query(`BEGIN ISOLATION LEVEL ${options.isolation ?? 'READ COMMITTED'}; SET LOCAL lock_timeout = ${lockMs}; SET LOCAL statement_timeout = ${statementMs}`);
      const result = await fn(client as Tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      const code = (error as { code?: string }).code;
      if (code !== undefined && RETRYABLE.has(code) && attempt < retries) {
        await sleep(5 * 2 ** attempt + Math.random() * 10);
        continue;
      }
      throw error;
    } finally {
      client.release(broken);
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
  return /ECONNREFUSED|ECONNRESET|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
}

/** lock_timeout or statement_timeout fired: the transaction rolled back because the database is busy. */
export function isBusyError(error: unknown): boolean {
  const code = pgCode(error);
  return code === '55P03' || code === '57014';
}
