import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { newClient } from './pg-primary.ts';
import { ROOT } from './root.ts';

const MIGRATIONS_DIR = path.join(ROOT, 'migrations');
// Arbitrary but fixed: every flashpay process that migrates takes this one advisory lock.
const MIGRATION_LOCK_KEY = 7_294_629;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: await readFile(path.join(dir, file), 'utf8'),
    })),
  );
}

// Deadlock (40P01) and lock not available (55P03, the lock timeout): nothing was applied.
const RETRIED = new Set(['40P01', '55P03']);
const ATTEMPTS = 10;
const LOCK_TIMEOUT = '2s';

/**
 * Applies pending migrations, each in its own transaction, under a session advisory lock so two
 * processes starting at once apply each migration exactly once (the second waits, then finds
 * nothing left to do). Returns the versions it applied.
 */
export async function migrate(databaseUrl: string, migrations?: Migration[]): Promise<number[]> {
  const all = migrations ?? (await loadMigrations());
  // On the writable primary when the URL names several hosts (pg-primary.ts).
  const client = newClient(databaseUrl);
  await client.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    for (const migration of all) {
      if (done.has(migration.version)) continue;
      for (let attempt = 1; ; attempt++) {
        await client.query('BEGIN');
        try {
          // A queued ALTER's lock stops every later query on its table: on a serving database it
          // waits LOCK_TIMEOUT at most, then lets traffic through and tries again.
          await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
            migration.version,
            migration.name,
          ]);
          await client.query('COMMIT');
          break;
        } catch (error) {
          await client.query('ROLLBACK');
          const code = (error as { code?: string }).code ?? '';
          // Rolled back whole: a deadlock with the sale's own transactions, or a lock not had in
          // time, is tried again (RD-01 met one: the migration altered orders, then skus, while a
          // pay held skus and wanted orders).
          if (RETRIED.has(code) && attempt < ATTEMPTS) {
            await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
            continue;
          }
          throw new Error(`migration ${migration.version}_${migration.name} failed: ${(error as Error).message}`);
        }
      }
      applied.push(migration.version);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
  return applied;
}

/** A release started on a database that lacks some of its migrations, with migrating on start off. */
export class MigrationsPendingError extends Error {
  constructor(readonly pending: number[]) {
    super(
      `the database lacks migrations ${pending.join(', ')} that this release needs, and FLASHPAY_MIGRATE_ON_START=0: ` +
        'run `flashpay migrate` once (the deploy step) before starting the new processes',
    );
    this.name = 'MigrationsPendingError';
  }
}

/** The versions of `migrations` not recorded in the database (all of them on an empty database). */
export async function pendingMigrations(databaseUrl: string, migrations?: Migration[]): Promise<number[]> {
  const all = migrations ?? (await loadMigrations());
  const client = newClient(databaseUrl);
  await client.connect();
  try {
    const table = await client.query<{ name: string | null }>("SELECT to_regclass('schema_migrations') AS name");
    if (table.rows[0]?.name === null) return all.map((m) => m.version);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    return all.filter((m) => !done.has(m.version)).map((m) => m.version);
  } finally {
    await client.end();
  }
}

/**
 * What `start` does to the schema. FLASHPAY_MIGRATE_ON_START=1 (the default, one machine and
 * development): migrates. =0 (a rolling deploy, docs/deploy.md): never changes the schema, and
 * refuses to serve on one that lacks a migration of this release; migrations the database has and
 * this release does not know (a newer release's expand step) are fine: expand-only keeps old code working.
 */
export async function migrateOnStart(databaseUrl: string, env: NodeJS.ProcessEnv = process.env): Promise<number[]> {
  const setting = env.FLASHPAY_MIGRATE_ON_START ?? '1';
  if (setting !== '0' && setting !== '1') throw new Error(`FLASHPAY_MIGRATE_ON_START must be 0 or 1, got "${setting}"`);
  if (setting === '1') return migrate(databaseUrl);
  const pending = await pendingMigrations(databaseUrl);
  if (pending.length > 0) throw new MigrationsPendingError(pending);
  return [];
}
