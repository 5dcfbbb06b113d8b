import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbedded, withDatabase, type EmbeddedCluster } from '../src/platform/embedded.ts';
import { pruneOrphansQuietly, scratchDir } from '../src/platform/embedded.moved.ts';
import { migrate } from '../src/platform/migrate.ts';
import { databaseOf } from '../src/platform/pg-hosts.ts';
import { newClient } from '../src/platform/pg-primary.ts';

/** The database one bench run owns: created for it, migrated, and gone afterwards. */
export interface BenchDatabase {
  url: string;
  /** Human description for the report: embedded in a temp dir, or a fresh database on DATABASE_URL's server. */
  where: string;
  close(): Promise<void>;
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = newClient(serverUrl);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** DATABASE_URL's server: a fresh database for this run, dropped after (WITH FORCE: pools may linger). */
async function onServer(serverUrl: string): Promise<BenchDatabase> {
  const name = `flashpay_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  const url = withDatabase(serverUrl, name);
  try {
    await migrate(url);
  } catch (error) {
    await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    throw error;
  }
  return {
    url,
    where: `database ${name} on DATABASE_URL's server (dropped afterwards)`,
    close: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
  };
}

const EXIT_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * A throwaway embedded cluster in a temp dir (default synchronous_commit: commits are fsynced). As
 * root the dir is one the `postgres` user reaches (scratchDir), so the cluster is never moved under
 * /var/lib/flashpay; it goes at the end, after a failure, and on SIGINT/SIGTERM/SIGHUP (issue 56).
 */
async function embedded(log: (line: string) => void): Promise<BenchDatabase> {
  const dir = await scratchDir('bench');
  // PostgreSQL's chatter stays out of the report; a real failure does not. The shutdown at the end
  // terminates idle connections with a FATAL that is expected.
  const important = (message: string) => {
    for (const line of message.split('\n')) {
      if (/FATAL|PANIC/.test(line) && !/administrator command/.test(line)) log(line.trim());
    }
  };
  let cluster: EmbeddedCluster | undefined;
  let removing: Promise<void> | undefined;
  const remove = () =>
    (removing ??= (async () => {
      for (const signal of EXIT_SIGNALS) process.off(signal, onSignal);
      try {
        await cluster?.stop();
      } finally {
        await rm(dir, { recursive: true, force: true });
        await pruneOrphansQuietly(log);
      }
    })());
  function onSignal(signal: NodeJS.Signals): void {
    log(`${signal}: removing the bench's PostgreSQL in ${dir}`);
    void remove().finally(() => process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1)));
  }
  for (const signal of EXIT_SIGNALS) process.once(signal, onSignal);
  try {
    cluster = await startEmbedded({ dataDir: path.join(dir, 'pg'), persistent: false, log: important, notice: log });
    await ensureDatabase(cluster.url('postgres'), 'flashpay_bench');
    const url = cluster.url('flashpay_bench');
    await migrate(url);
    return { url, where: `embedded PostgreSQL in ${dir} (removed afterwards)`, close: remove };
  } catch (error) {
    await remove().catch(() => undefined);
    throw error;
  }
}

export function openBenchDatabase(
  log: (line: string) => void,
  serverUrl = process.env.DATABASE_URL,
): Promise<BenchDatabase> {
  return serverUrl ? onServer(serverUrl) : embedded(log);
}

/** launchStack made `<database>_channel` for its own provider double's ledger; the bench leaves nothing behind. */
export async function dropChannelDatabase(databaseUrl: string): Promise<void> {
  const name = `${databaseOf(databaseUrl) || 'postgres'}_channel`;
  const client = newClient(withDatabase(databaseUrl, 'postgres'));
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
