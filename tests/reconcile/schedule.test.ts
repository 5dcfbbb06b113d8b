import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullEveryNth, RECONCILE_FULL_EVERY_MS, whenChanged } from '../../src/reconcile/reconcile.schedule.ts';
import { eventually } from '../support/payments.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Proves the background reconciliation costs nothing on a quiet system: it runs again only after
// a write to the tables it reads (PostgreSQL's write counters), or after the full-pass interval.
describe('reconciliation schedule', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  it('R-01: a quiet system is skipped; a write makes the next pass run; the full interval forces one', async () => {
    let now = 0;
    let passes = 0;
    const tick = whenChanged(
      db.pool,
      async () => void passes++,
      () => now,
    );
    expect(await tick()).toBe('RAN');
    expect(await tick()).toBe('SKIPPED');
    await db.pool.query(
      `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, hold_ttl_ms, created_at) VALUES ('t', 's', 'S', 1, 1, 1, 0, 1000, now())`,
    );
    // The statistics are flushed by the writing backend within a second or so: wait for the counter, not a clock.
    await eventually(
      () => tick(),
      (result) => result === 'RAN',
      10_000,
    );
    expect(await tick()).toBe('SKIPPED');
    now += RECONCILE_FULL_EVERY_MS;
    expect(await tick()).toBe('RAN');
    expect(passes).toBe(3);
  });

  it('R-02: the scheduled passes are incremental, with a full rebuild first and every Nth after it', async () => {
    const kinds: boolean[] = [];
    const tick = fullEveryNth(async (full) => void kinds.push(full), 3);
    for (let i = 0; i < 7; i++) await tick();
    expect(kinds).toEqual([true, false, false, true, false, false, true]);
  });
});
