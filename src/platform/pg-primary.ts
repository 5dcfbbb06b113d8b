import pg from 'pg';
import { isPgUrl, needsHostChoice, parsePgUrl, singleHostUrl, type PgUrl, type SessionAttrs } from './pg-hosts.ts';
import { HostBook, ROLE_RECHECK_INTERVAL_MS, type RoleStamp } from './pg-role.ts';

// A pg.Client that connects only to a host that satisfies the URL's target_session_attrs, trying
// the hosts of a libpq multi-host URL (pg-hosts.ts) as libpq does: it is given to pg.Pool as its
// `Client`, so the pool never holds a connection that was not checked on itself, and after a
// failover new connections find the new primary without a restart. Connections to a primary that
// died fail and the pool drops them (db.ts); a statement that meets a read-only server (25006) is a
// connection fault there too, and its connection is discarded. A pooled connection re-checks its
// server's role before use after any failover signal and at a bounded interval (pg-role.ts,
// db.pool.ts): a partition or a failover does not close the connections to an old primary.

// A lone client (migrate's, a LISTEN) has no connect timeout: a host that drops our SYN must not
// hold the next one back for the kernel's two minutes, so without a budget each host gets this.
const HOST_TIMEOUT_WITHOUT_BUDGET_MS = 10_000;
// Below this a further host is not worth starting: the pool's own connect timeout is about to fire.
const MIN_ATTEMPT_MS = 20;

/** No host satisfied target_session_attrs within the connect timeout: the database is unreachable. */
export class NoPrimaryError extends Error {
  // 08001 (sqlclient_unable_to_establish_sqlconnection), so isConnectionError and the 503 mapping know it.
  readonly code = '08001';
  constructor(tried: string[]) {
    super(`no writable primary among the database hosts (${tried.join('; ') || 'none tried'})`);
  }
}

// pg 8.23.1's Client fields (pinned in package.json) that one connection attempt uses. A Client
// connects once; to try the next host, the spent Connection is let go and these are set as the
// constructor left them, on a Connection built by pg itself from the same config.
interface Internals {
  connection: pg.Connection & {
    stream: { destroy(): void };
    end(): void;
    on(event: string, listener: (m: { code?: string }) => void): void;
  };
  host: string;
  port: number;
  connectionParameters: { host: string; port: number };
  connectionTimeoutHandle?: NodeJS.Timeout;
  _connectionTimeoutMillis: number;
  _queryable: boolean;
}

const freshState = {
  _connecting: false,
  _connected: false,
  _connectionError: false,
  _queryable: true,
  _ending: false,
  _ended: false,
  _activeQuery: null,
  _connectionCallback: null,
  readyForQuery: false,
  _txStatus: null,
  processID: null,
  secretKey: null,
};

/**
 * A server that answered and refused for a reason of its own (3D000 no such database, 28P01 bad
 * password) is not a matter of reaching it: that error is the outcome, as with one host, so that
 * callers still see it (the channel creates its missing database on 3D000). Unreachable, shutting
 * down, starting up, too many connections (08, 57P, 53) are the search's to report.
 */
function serverRefusal(error: unknown): Error | undefined {
  const code = (error as { code?: unknown }).code;
  if (!(error instanceof pg.DatabaseError) || typeof code !== 'string' || /^(08|57P|53)/.test(code)) return undefined;
  return error;
}

type Callback = ((err: Error) => void) | ((err: null, c: pg.Client) => void);

/** What a pool asks of its connections before handing one out (db.pool.ts). */
export interface RoleChecked {
  /** True when this connection's role must be checked before use (a failover signal, the interval). */
  roleCheckDue(): boolean;
  /** Asks the server whether it can still take writes; false means discard this connection. */
  checkRole(timeoutMs: number): Promise<boolean>;
}

export function isRoleChecked(client: unknown): client is RoleChecked {
  return typeof (client as Partial<RoleChecked> | null)?.roleCheckDue === 'function';
}

const ROLE_SQL = `SELECT pg_catalog.pg_is_in_recovery() AS recovering, current_setting('transaction_read_only') AS read_only`;

/** The Client class for one parsed URL; its instances share what they know of the hosts (pg-role.ts). */
export function primaryClientClass(parsed: PgUrl, recheckMs = ROLE_RECHECK_INTERVAL_MS): typeof pg.Client {
  const hosts = parsed.hosts;
  const attrs: SessionAttrs = parsed.sessionAttrs ?? 'any';
  const book = new HostBook(hosts.length, recheckMs);

  return class PrimaryClient extends pg.Client {
    readonly #config: string | pg.ClientConfig | undefined;
    #attempting = false;
    #used = false;
    #closed = false;
    #search: Promise<void> | undefined;
    #hostIndex = -1;
    #stamp: RoleStamp | undefined;

    constructor(config?: string | pg.ClientConfig) {
      super(config);
      this.#config = config;
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: Callback): void;
    override connect(callback?: Callback): Promise<pg.Client> | void {
      // A client connects once, as pg's own: a second connect() must not touch the live connection.
      const connected = this.#used
        ? Promise.reject(new Error('Client has already been connected. You cannot reuse a client.'))
        : (this.#search = this.#connectToPrimary()).then(() => this as pg.Client);
      this.#used = true;
      if (!callback) return connected;
      connected.then(
        (client) => (callback as (err: null, c: pg.Client) => void)(null, client),
        (error: Error) => (callback as (err: Error) => void)(error),
      );
    }

    // end() during the search (a LISTEN loop stopping) cuts the attempt in flight and no further
    // host is tried; there is then no connection left to end. pg's end() would wait for the 'end'
    // of an attempt's connection that the search has already let go.
    override end(): Promise<void>;
    override end(callback: (err: Error) => void): void;
    override end(callback?: (err: Error) => void): Promise<void> | void {
      this.#closed = true;
      if (!this.#attempting) return callback ? super.end(callback) : super.end();
      (this as unknown as Internals).connection.stream.destroy();
      const ended = (this.#search ?? Promise.resolve()).then(
        () => undefined,
        () => undefined,
      );
      if (!callback) return ended;
      void ended.then(() => (callback as (err?: Error) => void)());
    }

    // While hosts are tried, what a spent attempt emits ('end' of its socket, 'error' of its check)
    // is not news to the pool or a LISTEN loop: only the outcome of connect() is.
    override emit(event: string | symbol, ...args: unknown[]): boolean {
      if (this.#attempting && (event === 'end' || event === 'error')) return false;
      return super.emit(event, ...args);
    }

    async #connectToPrimary(): Promise<void> {
      const self = this as unknown as Internals;
      const budgetMs = self._connectionTimeoutMillis;
      const startedAt = Date.now();
      const order = book.order();
      const tried: string[] = [];
      let refusal: Error | undefined;
      this.#attempting = true;
      try {
        for (const [at, index] of order.entries()) {
          const remainingMs = budgetMs > 0 ? budgetMs - (Date.now() - startedAt) : Infinity;
          if (at > 0 && (remainingMs < MIN_ATTEMPT_MS || this.#closed)) break;
          if (at > 0) this.#renew();
          const host = hosts[index] ?? hosts[0]!;
          self.host = self.connectionParameters.host = host.host;
          self.port = self.connectionParameters.port = host.port;
          // The budget is shared so that a silent host leaves the others their turn.
          self._connectionTimeoutMillis =
            budgetMs > 0 ? Math.max(1, Math.floor(remainingMs / (order.length - at))) : HOST_TIMEOUT_WITHOUT_BUDGET_MS;
          const reported = new Map<string, string>();
          self.connection.on('parameterStatus', (message: { parameterName: string; parameterValue: string }) =>
            reported.set(message.parameterName, message.parameterValue),
          );
          const label = `${host.host}:${host.port}`;
          let writable: boolean;
          try {
            await super.connect();
            writable = attrs === 'any' || (await this.#isWritable(reported, remainingMs));
          } catch (error) {
            tried.push(`${label}: ${(error as Error).message}`);
            refusal ??= serverRefusal(error);
            this.#letGo(false);
            continue;
          }
          if (writable) {
            book.noteGood(index);
            this.#watch(index);
            self._connectionTimeoutMillis = budgetMs;
            return;
          }
          book.noteReadOnly(index, false);
          tried.push(`${label}: read-only (a standby, or default_transaction_read_only)`);
          this.#letGo(true);
        }
        // Spent: connect() fails, and a statement sent anyway fails at once instead of waiting.
        this.#renew();
        self._queryable = false;
        throw refusal ?? new NoPrimaryError(tried);
      } finally {
        this.#attempting = false;
      }
    }

    /**
     * On the connection itself, so a failover between two attempts cannot hand out a standby.
     * PostgreSQL 14+ reports in_hot_standby and default_transaction_read_only at startup (libpq's
     * way, no round trip); an older server is asked, as libpq asks it.
     */
    async #isWritable(reported: Map<string, string>, remainingMs: number): Promise<boolean> {
      const standby = reported.get('in_hot_standby');
      const readOnly = reported.get('default_transaction_read_only');
      const timeout = Number.isFinite(remainingMs) ? { query_timeout: Math.max(1, remainingMs) } : {};
      if (attrs === 'primary') {
        if (standby !== undefined) return standby === 'off';
        const sql = 'SELECT pg_catalog.pg_is_in_recovery() AS recovering';
        const result = await this.query({ text: sql, ...timeout } as pg.QueryConfig);
        return result.rows[0]?.recovering === false;
      }
      if (standby !== undefined && readOnly !== undefined) return standby === 'off' && readOnly === 'off';
      const result = await this.query({ text: 'SHOW transaction_read_only', ...timeout } as pg.QueryConfig);
      return result.rows[0]?.transaction_read_only === 'off';
    }

    /**
     * Failover signals seen on this connection reach every connection of the URL: a write refused
     * (25006: a standby, a demoted or fenced primary) and a connection lost that we did not end.
     */
    #watch(index: number): void {
      this.#hostIndex = index;
      this.#stamp = book.stamp();
      const connection = (this as unknown as Internals).connection;
      connection.on('errorMessage', (message) => {
        if (message.code === '25006') book.noteReadOnly(index, true);
      });
      connection.on('end', () => {
        if (!this.#closed) book.signal();
      });
    }

    roleCheckDue(): boolean {
      // `any` asks nothing of a server's role (libpq's meaning); its guard is the order of hosts.
      return attrs !== 'any' && this.#stamp !== undefined && book.isDue(this.#stamp);
    }

    async checkRole(timeoutMs: number): Promise<boolean> {
      const result = await this.query({ text: ROLE_SQL, query_timeout: timeoutMs } as pg.QueryConfig);
      const row = result.rows[0] as { recovering: boolean; read_only: string } | undefined;
      const writable = row?.recovering === false && (attrs === 'primary' || row.read_only === 'off');
      if (writable) this.#stamp = book.stamp();
      else book.noteReadOnly(this.#hostIndex, true);
      return writable;
    }

    /** Lets the spent attempt's connection go: its events no longer reach this client. */
    #letGo(graceful: boolean): void {
      const self = this as unknown as Internals;
      clearTimeout(self.connectionTimeoutHandle);
      const spent = self.connection;
      spent.removeAllListeners();
      spent.on('error', () => undefined); // a late socket error of a connection we dropped is nobody's
      if (graceful) spent.end();
      else spent.stream.destroy();
    }

    /** This client as its constructor left it, on a new Connection pg builds from the same config. */
    #renew(): void {
      Object.assign(this, freshState, { connection: new pg.Client(this.#config).connection });
    }
  };
}

export interface Route {
  /** What pg parses: the URL itself, or the first host's single-host URL when a Client chooses. */
  connectionString: string;
  /** Set when the URL needs a choice of host (several hosts, or target_session_attrs). */
  Client?: typeof pg.Client;
}

/**
 * How to connect to `url`. A single host without target_session_attrs is pg's alone, the URL
 * untouched: the pool is then exactly the plain pg.Pool it always was, with no extra round trip.
 */
export function routeFor(url: string, recheckMs = ROLE_RECHECK_INTERVAL_MS): Route {
  if (!isPgUrl(url) || !needsHostChoice(url)) return { connectionString: url };
  const parsed = parsePgUrl(url);
  const first = parsed.hosts[0];
  if (!first) throw new Error('DATABASE_URL: target_session_attrs needs at least one host');
  return { connectionString: singleHostUrl(parsed, first), Client: primaryClientClass(parsed, recheckMs) };
}

/** A lone pg.Client for `url` (migrations, CREATE DATABASE), on the primary when the URL asks for one. */
export function newClient(url: string, config: pg.ClientConfig = {}): pg.Client {
  const route = routeFor(url);
  const Client = route.Client ?? pg.Client;
  return new Client({ ...config, connectionString: route.connectionString });
}
