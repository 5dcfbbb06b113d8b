import pg from 'pg';
import { businessMetrics } from './business-metrics.ts';
import { CheckedPool } from './db.pool.ts';
import { routeFor } from './pg-primary.ts';
import { ROLE_RECHECK_INTERVAL_MS } from './pg-role.ts';
import { pgbouncerFromEnv, unpreparedClientClass } from './pgbouncer.ts';
import { CommitOutcomeUnknownError, isCommitAnswerLost, isConnectionError } from './db.errors.ts';
import { commitWith, inOneWrite, RolledBackError, withCommit, type Switchable } from './db.commit.ts';
import { SpanKind, tracingOn, withSpan, type Span } from './tracing.ts';
import { recordStatements, traceparentSetting } from './tracing.db.ts';
export {
  CommitOutcomeUnknownError,
  isBusyError,
  isConnectionError,
  isDatabaseFault,
  isReadOnlyError,
  pgCode,
} from './db.errors.ts';
export { sendWithCommit } from './db.commit.ts';

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

// Settings every pooled session starts with (the startup packet's `options`, so no round trip),
// so that an external server plans flashpay's statements as the embedded one does, untuned:
// - jit = off: a PostgreSQL built with LLVM compiles any statement whose estimated cost passes
//   jit_above_cost (100,000), and a set-based statement over 1,000 rows passes it on estimates
//   alone (a LATERAL probe per key is costed at 50 rows). On this machine's PostgreSQL 15 the stock
//   side's lock of 1,000 orders' reservations ran 8 ms and spent 150–240 ms compiling; P7's drain
//   went from 3,100 to 5,600 reserved/s with it off (docs/benchmarks/journal.md §20). Nothing here is an
//   analytic query that JIT would repay.
// - random_page_cost = 1.1 (the embedded server's setting): at the default 4, a group of 1,000
//   keys (`order_id = ANY($1)`: recovery's answers, stock results) was planned as a scan of every
//   order, 14 ms against 2.3 ms by index (§13). The working set of a sale is in memory.
// PGOPTIONS is kept (after ours, so it wins); a URL with its own `options` parameter replaces
// both, as pg reads the URL last. Behind PgBouncer (FLASHPAY_PGBOUNCER=1) none are sent: a pooler
// in transaction mode keeps no session, and the operator sets both with ALTER DATABASE … SET
// (docs/deploy.md, pgbouncer.ts).
export const SESSION_OPTIONS = '-c jit=off -c random_page_cost=1.1';

export function sessionOptions(env: NodeJS.ProcessEnv = process.env): string {
  return [SESSION_OPTIONS, env.PGOPTIONS?.trim()].filter(Boolean).join(' ');
}

/** Bounds a test may shorten; production takes the defaults. */
export interface PoolTuning {
  /** Client-side bound on one statement (a COMMIT included): QUERY_TIMEOUT_MS. */
  queryTimeoutMs?: number;
  /** Longest a pooled connection goes without re-checking its server's role (pg-role.ts). */
  roleRecheckMs?: number;
}

/**
 * A URL naming several hosts or a target_session_attrs (libpq's form) gets a Client that connects
 * only to a host that qualifies (pg-primary.ts); any other URL, the plain pool exactly as before.
 * Behind PgBouncer in transaction mode (`pgbouncer`, default FLASHPAY_PGBOUNCER=1): no session
 * settings and no named prepared statements (pgbouncer.ts).
 */
export function createPool(
  url: string,
  max: number,
  connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
  pgbouncer = pgbouncerFromEnv(),
  tuning: PoolTuning = {},
): Db {
  const route = routeFor(url, tuning.roleRecheckMs ?? ROLE_RECHECK_INTERVAL_MS);
  const Client = pgbouncer ? unpreparedClientClass(route.Client ?? pg.Client) : route.Client;
  const PoolClass = route.Client ? CheckedPool : pg.Pool;
  const pool = new PoolClass({
    connectionString: route.connectionString,
    ...(Client ? { Client } : {}),
    ...(pgbouncer ? {} : { options: sessionOptions() }),
    max,
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: tuning.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
    keepAlive: true,
  });
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
  /**
   * Pipelined transaction: `BEGIN` goes out together with the first statement of `fn`, and the
   * statements given to `sendWithCommit` together with `COMMIT`: two round trips fewer. A statement
   * sent with `COMMIT` must fail itself when it did not do its job (its error turns the `COMMIT`
   * into a rollback); one whose outcome is only checked in JS has no place there.
   */
  pipeline?: boolean;
}

/**
 * Calls that each send statements on `ex`, without a round trip each where that is safe: on a
 * pool (separate connections) and on a pipelined transaction (they leave together, and PostgreSQL
 * runs them in the order given) at once, and what each sends before its first await in one write
 * (inOneWrite); on a transaction that is not pipelined one after another (the client would only
 * queue them, and pg 9 refuses overlapping calls on one client). Results in the order of the
 * calls; the first failure is the error.
 */
export async function allOf<T extends unknown[]>(
  ex: Executor,
  calls: { [K in keyof T]: () => Promise<T[K]> },
): Promise<T> {
  if (ex instanceof pg.Pool) return (await Promise.all(calls.map((call) => call()))) as T;
  if ((ex as unknown as Switchable).pipeline === true)
    return (await inOneWrite(ex as pg.PoolClient, () => Promise.all(calls.map((call) => call())))) as T;
  const out: unknown[] = [];
  for (const call of calls) out.push(await call());
  return out as T;
}

const RETRYABLE = new Set(['40001', '40P01']);
const MAX_RETRIES = 5;
const CONNECTION_RETRIES = 1;

/** The one transaction helper: explicit isolation and timeouts, bounded retry with jitter. */
export function inTx<T>(db: Db, fn: (tx: Tx) => Promise<T>, options: TxOptions = {}): Promise<T> {
  if (!tracingOn()) return runTx(db, fn, options, undefined);
  const attributes = {
    'db.system.name': 'postgresql',
    'db.transaction.isolation': options.isolation ?? 'READ COMMITTED',
  };
  return withSpan('tx', { kind: SpanKind.CLIENT, attributes }, (span) => runTx(db, fn, options, span));
}

async function runTx<T>(db: Db, fn: (tx: Tx) => Promise<T>, options: TxOptions, span: Span | undefined): Promise<T> {
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
    const pipelined = options.pipeline === true;
    if (pipelined) (client as unknown as Switchable).pipeline = true;
    withCommit.delete(client);
    const recorded = span ? recordStatements(client, span) : undefined;
    try {
      // One round trip: the timeouts are integers we format, never caller-supplied text.
      const lockMs = Math.trunc(options.lockTimeoutMs ?? 5_000);
      const statementMs = Math.trunc(options.statementTimeoutMs ?? 30_000);
      const beginText = `BEGIN ISOLATION LEVEL ${options.isolation ?? 'READ COMMITTED'}; SET LOCAL lock_timeout = ${lockMs}; SET LOCAL statement_timeout = ${statementMs}${span ? traceparentSetting() : ''}`;
      let result: T;
      if (pipelined) {
        // fn's first statement (sent before fn's first await) goes out behind BEGIN, in its write.
        // BEGIN and its SET LOCALs are fixed text that fails only with the connection, which fails
        // fn's statements too.
        const [begin, running] = inOneWrite(client, () => {
          const sent = client.query(beginText);
          sent.catch(() => undefined);
          return [sent, fn(client as Tx)] as const;
        });
        result = await running;
        await begin;
      } else {
        await client.query(beginText);
        result = await fn(client as Tx);
      }
      await commitWith(client, pipelined, () => (committing = true));
      return result;
    } catch (error) {
      // Once COMMIT is on its way, only the server's own refusal (an error answer: 25006 on a
      // read-only server, a deferred constraint, a serialization failure) says nothing committed.
      // A lost connection, a read timeout, a backend terminated while waiting for a synchronous
      // standby: it may have committed (db.errors.ts).
      if (error instanceof CommitOutcomeUnknownError) {
        broken = true;
        throw error;
      }
      if (committing && !(error instanceof RolledBackError) && isCommitAnswerLost(error)) {
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
      recorded?.();
      withCommit.delete(client);
      // Every statement of this transaction has been answered (COMMIT or ROLLBACK was the last).
      if (pipelined) (client as unknown as Switchable).pipeline = false;
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
