import pg from 'pg';

// Behind PgBouncer in transaction mode (FLASHPAY_PGBOUNCER=1) a client holds a server connection
// only for one transaction (an autocommit statement is one): the next may run on another backend.
// So nothing may live in the session between transactions:
// - session settings: no startup `options` (PgBouncer 1.18 refuses the parameter, and a SET would
//   stay on whichever backend ran it); the operator sets jit and random_page_cost with ALTER
//   DATABASE … SET instead (docs/deploy.md);
// - named prepared statements: pg prepares a statement with a `name` once per client and later
//   only binds it, which fails (26000) on a backend that never saw it; they run unnamed here;
// - session advisory locks: singleton.ts holds its lock in a transaction (pg_try_advisory_xact_lock);
// - LISTEN: only on a direct connection (FLASHPAY_DIRECT_DATABASE_URL), as are migrations.

/** FLASHPAY_PGBOUNCER=1: DATABASE_URL is a PgBouncer in transaction mode. */
export function pgbouncerFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const raw = env.FLASHPAY_PGBOUNCER;
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new Error(`FLASHPAY_PGBOUNCER must be 0 or 1, got "${raw}"`);
}

type QueryFn = (config: unknown, ...rest: unknown[]) => unknown;

/** A statement config without its `name`: parsed unnamed on whichever backend runs it. */
function unnamed(config: unknown): unknown {
  if (typeof config !== 'object' || config === null || !('name' in config)) return config;
  // A Submittable (pg.Query, pg-cursor) carries its own protocol logic; flashpay sends none of them.
  if (typeof (config as { submit?: unknown }).submit === 'function') return config;
  const rest: Record<string, unknown> = { ...(config as Record<string, unknown>) };
  delete rest.name;
  return rest;
}

/** `Base` whose every statement runs unnamed (no prepared statement outlives its transaction). */
export function unpreparedClientClass(Base: typeof pg.Client): typeof pg.Client {
  return class UnpreparedClient extends Base {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      const query = (this.query as QueryFn).bind(this);
      (this as unknown as { query: QueryFn }).query = (config, ...rest) => query(unnamed(config), ...rest);
    }
  };
}
