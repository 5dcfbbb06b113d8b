import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createPool, type Db } from '../../src/platform/db.ts';
import { withDatabase } from '../../src/platform/embedded.ts';

export interface TestDatabase {
  url: string;
  name: string;
  pool: Db;
  drop(): Promise<void>;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('serverUrl') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A fresh, migrated database cloned from the run's template: cheap (a file copy) and isolated.
 * `migrated: false` gives an empty database (the channel's own ledger, or migration tests).
 */
export async function freshDatabase(options: { migrated?: boolean; poolSize?: number } = {}): Promise<TestDatabase> {
  const name = `t_${inject('templateDb').split('_').pop()}_${randomBytes(5).toString('hex')}`;
  const template = options.migrated === false ? 'template0' : inject('templateDb');
  await admin((client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  const url = withDatabase(inject('serverUrl'), name);
  const pool = createPool(url, options.poolSize ?? 20);
  return {
    url,
    name,
    pool,
    async drop() {
      await pool.end();
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
