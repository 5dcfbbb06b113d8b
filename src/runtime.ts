import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './platform/config.ts';
import { ensureDatabase, startEmbedded, withDatabase, type EmbeddedCluster } from './platform/embedded.ts';
import { databaseOf } from './platform/pg-hosts.ts';

const SERVICE_DB = 'flashpay';
const CHANNEL_DB = 'flashpay_channel';

export interface DatabaseTarget {
  /** The service's own database. */
  url: string;
  /** The fake provider's ledger: its own database on the same server, kept apart from ours. */
  channelUrl: string;
  embedded: EmbeddedCluster | undefined;
}

/** Where a running `flashpay start` left its addresses, so other commands can find its database. */
export interface RuntimeInfo {
  pid: number;
  databaseUrl: string;
  api: string;
  channel: string;
}

const runtimeFile = (config: Config) => path.join(config.dataDir, 'runtime.json');

export async function writeRuntime(config: Config, info: RuntimeInfo): Promise<void> {
  await mkdir(config.dataDir, { recursive: true });
  // It holds the database URL with its password: this user's only.
  await writeFile(runtimeFile(config), `${JSON.stringify(info)}\n`, { mode: 0o600 });
  await chmod(runtimeFile(config), 0o600);
}

export async function clearRuntime(config: Config): Promise<void> {
  await rm(runtimeFile(config), { force: true });
}

export async function readRuntime(config: Config): Promise<RuntimeInfo | undefined> {
  if (!existsSync(runtimeFile(config))) return undefined;
  const info = JSON.parse(await readFile(runtimeFile(config), 'utf8')) as RuntimeInfo;
  try {
    process.kill(info.pid, 0);
    return info;
  } catch {
    return undefined; // left by a process that died
  }
}

/**
 * DATABASE_URL when set; otherwise the embedded cluster under .flashpay/pg — reused when a running
 * `flashpay start` owns it, started (and initialised only the first time) when none does.
 */
export async function openDatabase(config: Config, log: (line: string) => void): Promise<DatabaseTarget> {
  if (config.databaseUrl) {
    const channelName = `${databaseOf(config.databaseUrl) || 'postgres'}_channel`;
    const channelUrl = withDatabase(config.databaseUrl, channelName);
    try {
      // CREATE DATABASE on the direct URL when there is one (a pooler may not serve `postgres`).
      await ensureDatabase(withDatabase(config.directDatabaseUrl ?? config.databaseUrl, 'postgres'), channelName);
      return { url: config.databaseUrl, channelUrl, embedded: undefined };
    } catch (error) {
      log(
        `cannot create database ${channelName} (${(error as Error).message}); the channel ledger shares the service database (channel_* tables)`,
      );
      return { url: config.databaseUrl, channelUrl: config.databaseUrl, embedded: undefined };
    }
  }
  const running = await readRuntime(config);
  if (running && running.pid !== process.pid) {
    return { url: running.databaseUrl, channelUrl: withDatabase(running.databaseUrl, CHANNEL_DB), embedded: undefined };
  }
  // PostgreSQL's own chatter stays out of our output; what needs a human does not.
  const important = (line: string) => {
    // Connections cut by our own shutdown are expected, not news.
    if (/FATAL|PANIC|not reachable/.test(line) && !/terminating connection due to administrator command/.test(line))
      log(line.trim());
  };
  const embedded = await startEmbedded({
    dataDir: path.join(config.dataDir, 'pg'),
    persistent: true,
    log: important,
    notice: log,
    supervise: true,
    // Running on without a database helps nobody: exit so that whatever runs us notices.
    onGiveUp: () => process.exit(1),
  });
  await ensureDatabase(embedded.url('postgres'), SERVICE_DB);
  await ensureDatabase(embedded.url('postgres'), CHANNEL_DB);
  return { url: embedded.url(SERVICE_DB), channelUrl: embedded.url(CHANNEL_DB), embedded };
}
