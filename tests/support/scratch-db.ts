import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { createPool, type Db } from '../../src/platform/db.ts';
import { ensureDatabase, startEmbedded, withDatabase } from '../../src/platform/embedded.ts';
import { migrate } from '../../src/platform/migrate.ts';
import { freshDatabase } from './db.ts';

/**
 * A migrated database for a file that may run without the suite's global setup (the cluster
 * suite's own config has none): the run's template when it is there (tests/support/db.ts), else a
 * database on DATABASE_URL's server, else a throwaway embedded PostgreSQL under `dir`.
 */
export async function scratchDatabase(dir: string): Promise<{ pool: Db; drop(): Promise<void> }> {
  if (inject('serverUrl')) return freshDatabase();
  const embedded = process.env.DATABASE_URL
    ? undefined
    : await startEmbedded({ dataDir: path.join(dir, 'pg'), persistent: false });
  const server = process.env.DATABASE_URL ?? embedded?.url('postgres') ?? '';
  const name = `scratch_${randomBytes(5).toString('hex')}`;
  await ensureDatabase(server, name);
  await migrate(withDatabase(server, name));
  const pool = createPool(withDatabase(server, name), 10);
  return {
    pool,
    async drop() {
      await pool.end();
      if (embedded) return embedded.stop();
      const admin = new pg.Client({ connectionString: server });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => admin.end());
    },
  };
}
