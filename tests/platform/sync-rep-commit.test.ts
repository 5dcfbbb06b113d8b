import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitOutcomeUnknownError, createPool, inTx, type Db } from '../../src/platform/db.ts';
import { ensureDatabase } from '../../src/platform/embedded.ts';
import { waitUntil } from '../support/poll.ts';
import { standbyBinaries, startPair, type PgPair } from './multihost.pair.ts';

// Proves (issue 50) that a COMMIT waiting for a synchronous standby that never confirms (as when
// the primary is cut off from it) is never reported as failed: cancelled (PostgreSQL then answers
// COMMIT with a WARNING, committed locally only) or its backend terminated, the caller gets
// CommitOutcomeUnknownError, and the row is indeed there on the primary.
const binaries = await standbyBinaries();

describe('a COMMIT cut short while it waits for the synchronous standby is unknown (issue 50)', () => {
  if (!binaries) {
    if (process.env.FLASHPAY_REQUIRE_EXTERNAL_PG === '1')
      it('SR-01..SR-02', () => {
        throw new Error('FLASHPAY_REQUIRE_EXTERNAL_PG=1 but no initdb and pg_ctl can make a standby');
      });
    else it.skip('SR-01..SR-02 — skipped: no PostgreSQL binaries for a standby', () => undefined);
    return;
  }
  let pair: PgPair;
  let admin: pg.Client;
  let pool: Db;
  beforeAll(async () => {
    pair = await startPair(binaries);
    await ensureDatabase(pair.url('postgres', 'read-write'), 'flashpay');
    admin = new pg.Client({ connectionString: pair.url('flashpay', 'any', [pair.primary]) });
    await admin.connect();
    await admin.query('CREATE TABLE sr_probe (id text PRIMARY KEY)');
    // A synchronous standby no one is: every COMMIT that wrote waits for ever, as on a primary
    // cut off from its standby.
    await admin.query(`ALTER SYSTEM SET synchronous_standby_names = 'nobody'`);
    await admin.query('SELECT pg_reload_conf()');
    pool = createPool(pair.url('flashpay', 'read-write'), 2, 2_000);
  });
  afterAll(async () => {
    await pool?.end();
    await admin?.end();
    await pair?.close();
  });

  const rows = async (id: string) =>
    (await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM sr_probe WHERE id = $1', [id])).rows[0]?.n;
  /** Starts a write whose COMMIT waits; resolves with its outcome once `cut` was applied to its backend. */
  const waitingCommit = async (id: string, cut: 'pg_cancel_backend' | 'pg_terminate_backend') => {
    const outcome = inTx(pool, (tx) => tx.query('INSERT INTO sr_probe (id) VALUES ($1)', [id])).then(
      () => 'committed',
      (error: unknown) => error,
    );
    const pid = await waitUntil(
      async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query = 'COMMIT'`,
          )
        ).rows[0]?.pid,
      (found) => found !== undefined,
      10_000,
    );
    await admin.query(`SELECT ${cut}($1)`, [pid]);
    return outcome;
  };

  it('SR-01: a cancel during the wait (COMMIT answered with a WARNING, committed locally): CommitOutcomeUnknownError, and the row is there', async () => {
    const outcome = await waitingCommit('sr-01', 'pg_cancel_backend');
    expect(outcome).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((outcome as Error).message).toMatch(/synchronous replication/);
    expect(await rows('sr-01')).toBe(1); // reported as "committed" it would survive no failover; as failed it would be a lie
  });

  it('SR-02: the backend terminated during the wait: CommitOutcomeUnknownError, and the row is there', async () => {
    const outcome = await waitingCommit('sr-02', 'pg_terminate_backend');
    expect(outcome).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(await rows('sr-02')).toBe(1);
  });
});
