import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, inTx, pgCode, sleep, type Db } from '../../src/platform/db.ts';
import { ensureDatabase } from '../../src/platform/embedded.ts';
import { pgbouncerFromEnv } from '../../src/platform/pgbouncer.ts';
import { disableRoleRecheckForTests } from '../../src/platform/pg-role.ts';
import type { SessionAttrs } from '../../src/platform/pg-hosts.ts';
import { waitFor, waitUntil } from '../support/poll.ts';
import { standbyBinaries, startPair, type PgNode, type PgPair } from './multihost.pair.ts';

// Proves (issue 50) that the connections a pool already holds do not outlive their server's role:
// with target_session_attrs=any a standby that refused a write is not connected to again first;
// pooled connections to a primary that was fenced (read-only) and replaced re-check their server at
// the bounded interval and after a failover signal (a 25006 on another connection) and move to the
// new primary; and, the negative controls, with the re-check switched off they stay on the old one.
const binaries = await standbyBinaries();
const CONNECT_TIMEOUT_MS = 2_000;
const RECHECK_MS = 300;
const HOUR_MS = 3_600_000;

interface Where {
  recovering: boolean;
  port: number;
  read_only: string;
}
const WHERE = `SELECT pg_is_in_recovery() AS recovering, inet_server_port() AS port, current_setting('transaction_read_only') AS read_only`;

describe('pooled connections re-check their server’s role (issue 50)', () => {
  if (!binaries) {
    if (process.env.FLASHPAY_REQUIRE_EXTERNAL_PG === '1')
      it('RR-01..RR-04', () => {
        throw new Error('FLASHPAY_REQUIRE_EXTERNAL_PG=1 but no initdb and pg_ctl can make a standby');
      });
    else it.skip('RR-01..RR-04 — skipped: no PostgreSQL binaries for a standby', () => undefined);
    return;
  }
  let pair: PgPair;
  beforeAll(async () => {
    pair = await startPair(binaries);
    await ensureDatabase(pair.url('postgres', 'read-write'), 'flashpay');
    const admin = new pg.Client({ connectionString: pair.url('flashpay', 'any', [pair.primary]) });
    await admin.connect();
    await admin.query('CREATE TABLE rr_probe (id serial PRIMARY KEY, note text NOT NULL)');
    await admin.end();
    // The standby serves reads once it has replayed the table: before that a connection to it is
    // refused and `any` lands on the primary, which RR-01 must not take for its own doing.
    await waitFor(
      async () => {
        const client = new pg.Client({ connectionString: pair.url('flashpay', 'any', [pair.standby]) });
        try {
          await client.connect();
          return (await client.query("SELECT to_regclass('rr_probe') AS t")).rows[0]?.t ? true : undefined;
        } catch {
          return undefined;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      'the standby serving reads with rr_probe replayed',
      60_000,
      100,
    );
  });
  afterAll(async () => pair?.close());

  const pool = (attrs: SessionAttrs, order: PgNode[], recheckMs: number, max = 3): Db =>
    createPool(pair.url('flashpay', attrs, order), max, CONNECT_TIMEOUT_MS, pgbouncerFromEnv(), {
      roleRecheckMs: recheckMs,
    });
  const onNode = async (node: PgNode, sql: string) => {
    const client = new pg.Client({ connectionString: pair.url('flashpay', 'any', [node]) });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  const fence = async (node: PgNode, on: boolean) => {
    await onNode(
      node,
      on ? 'ALTER SYSTEM SET default_transaction_read_only = on' : 'ALTER SYSTEM RESET default_transaction_read_only',
    );
    await onNode(node, 'SELECT pg_reload_conf()');
    // The reload is asynchronous. Once a new session sees the setting, the postmaster has reloaded
    // and signalled every backend, and a pooled one applies it before its next statement.
    await waitFor(
      async () => {
        const client = new pg.Client({ connectionString: pair.url('flashpay', 'any', [node]) });
        try {
          await client.connect();
          const shown = (
            await client.query<{ v: string }>("SELECT current_setting('default_transaction_read_only') AS v")
          ).rows[0]?.v;
          return shown === (on ? 'on' : 'off') || undefined;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      `${node.name} read-only ${on ? 'on' : 'off'}`,
      10_000,
      20,
    );
  };
  const write = (db: Db, note: string) =>
    inTx(db, (tx) => tx.query<Where>(`INSERT INTO rr_probe (note) VALUES ($1) RETURNING ${WHERE.slice(7)}`, [note]));
  /** `n` connections checked out at once, then all returned idle: the pool holds them. */
  const warm = async (db: Db, n: number) => {
    const clients = await Promise.all(Array.from({ length: n }, () => db.connect()));
    const ports = await Promise.all(clients.map(async (c) => (await c.query<Where>(WHERE)).rows[0]!.port));
    for (const c of clients) c.release();
    return ports;
  };
  /** `n` reads at once, each on its own pooled connection: the ports they ran on. */
  const readPorts = async (db: Db, n: number) => {
    const clients = await Promise.all(Array.from({ length: n }, () => db.connect()));
    try {
      return await Promise.all(clients.map(async (c) => (await c.query<Where>(WHERE)).rows[0]!.port));
    } finally {
      for (const c of clients) c.release();
    }
  };

  it('RR-01: target_session_attrs=any, standby listed first: one refused write moves the pool to the primary; the standby is not pinned', async () => {
    const db = pool('any', [pair.standby, pair.primary], HOUR_MS, 2);
    try {
      expect((await db.query<Where>(WHERE)).rows[0]?.port).toBe(pair.standby.port); // libpq's `any`
      // The pooled standby connection refuses (25006) and is discarded; the retry's new connection
      // no longer starts at the standby.
      expect((await write(db, 'rr-01')).rows[0]?.port).toBe(pair.primary.port);
      for (let i = 0; i < 5; i++) expect((await write(db, `rr-01-${i}`)).rows[0]?.port).toBe(pair.primary.port);
    } finally {
      await db.end();
    }
  });

  it('RR-02: the primary fenced and replaced: with the re-check off the pool stays on it (negative control); on, it moves within the interval', async () => {
    const db = pool('read-write', [pair.primary, pair.standby], RECHECK_MS);
    const enable = disableRoleRecheckForTests();
    try {
      expect(await warm(db, 3)).toEqual([pair.primary.port, pair.primary.port, pair.primary.port]);
      await fence(pair.primary, true);
      await pair.promote(pair.standby); // the new primary; the old one still answers, read-only
      // Nothing happens to the idle connections with time alone: several intervals, no statement failed.
      await sleep(3 * RECHECK_MS);
      expect(await readPorts(db, 3)).toEqual([pair.primary.port, pair.primary.port, pair.primary.port]);
      enable();
      const movedFrom = Date.now();
      await waitUntil(
        () => readPorts(db, 3),
        (ports) => ports.every((port) => port === pair.standby.port),
        RECHECK_MS + 5_000,
      );
      const movedMs = Date.now() - movedFrom;
      console.log(`RR-02: every pooled connection on the new primary ${movedMs} ms after the re-check was due`);
      expect((await write(db, 'rr-02')).rows[0]).toEqual({
        recovering: false,
        port: pair.standby.port,
        read_only: 'off',
      });
    } finally {
      enable();
      await db.end();
    }
  });

  it('RR-03: a write refused (25006) on one pooled connection makes the others re-check before use; off, they are handed out stale (negative control)', async () => {
    // Now: the old primary read-only, the standby promoted. The old primary is made writable again
    // so the pool fills there (listed first), then fenced: only the signal can move the idle ones.
    for (const recheck of [false, true]) {
      await fence(pair.primary, false);
      const db = pool('read-write', [pair.primary, pair.standby], HOUR_MS);
      const enable = recheck ? () => undefined : disableRoleRecheckForTests();
      try {
        expect(await warm(db, 3)).toEqual([pair.primary.port, pair.primary.port, pair.primary.port]);
        await fence(pair.primary, true);
        const client = await db.connect(); // one pooled connection meets the refusal
        const refused = await client.query(`INSERT INTO rr_probe (note) VALUES ('refused')`).catch((e: unknown) => e);
        client.release(true);
        expect(pgCode(refused)).toBe('25006');
        const ports = await readPorts(db, 2);
        if (recheck) expect(ports).toEqual([pair.standby.port, pair.standby.port]);
        else expect(ports).toEqual([pair.primary.port, pair.primary.port]);
      } finally {
        enable();
        await db.end();
      }
    }
  });
});
