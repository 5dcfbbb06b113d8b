import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/platform/migrate.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Two processes starting at once must apply each migration exactly once.
describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ migrated: false });
  });
  afterAll(async () => db.drop());

  it('applies every migration once when two migrators race, and records each', async () => {
    const [a, b] = await Promise.all([migrate(db.url), migrate(db.url)]);
    const all = await loadMigrations();
    expect([...a, ...b].sort()).toEqual(all.map((m) => m.version).sort());
    const rows = await db.pool.query('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.rows.map((r) => r.version)).toEqual(all.map((m) => m.version));
    expect(await migrate(db.url)).toEqual([]);
  });
});
