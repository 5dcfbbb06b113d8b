import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sleep } from './db.ts';
import { isRoot, reachableByOthers, type RunAs } from './embedded.binaries.ts';

// The embedded cluster's files: its data directory (initdb, a postmaster left behind, where root
// keeps it) and its superuser's password file. Starting and supervising it is embedded.ts.
export const EMBEDDED_USER = 'postgres';
/** The constant of the first versions, replaced on the next start (dev default, never a secret). */
export const LEGACY_PASSWORD = 'flashpay-dev-only';

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid of a postgres process running in `dataDir`, if any: the pid file's pid, alive, and postgres. */
export async function findRunningPostmaster(dataDir: string): Promise<number | undefined> {
  const pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
  // A recycled pid is some other process. Without /proc we cannot tell: taken for postgres (kept, asked to stop).
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  if (cmdline === undefined) return existsSync('/proc/self') ? undefined : pid;
  // The postmaster keeps its argv (`…/bin/postgres -D …`); a backend's title starts `postgres:`.
  return path.basename(cmdline.split('\0')[0] ?? '').startsWith('postgres') ? pid : undefined;
}

/**
 * A postmaster left behind by a `kill -9` of our Node process still owns the data directory.
 * Ask it to shut down fast (SIGINT), and only if it refuses, immediately (SIGQUIT). A pid file
 * whose process is gone, or is no longer postgres (a recycled pid), is stale; PostgreSQL itself
 * replaces it.
 */
export async function stopOrphanedPostmaster(dataDir: string): Promise<void> {
  await zombieGone(dataDir);
  const pid = await findRunningPostmaster(dataDir);
  if (pid === undefined) return;
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 15_000 && alive(pid); waited += 100) await sleep(100);
  if (alive(pid)) {
    process.kill(pid, 'SIGQUIT');
    for (let waited = 0; waited < 5_000 && alive(pid); waited += 100) await sleep(100);
  }
}

/**
 * A postmaster killed with its process group is dead but, until its new parent reaps it, a zombie:
 * its pid still answers kill(0), so PostgreSQL refuses the pid file ("another postmaster running"),
 * while its empty /proc cmdline says it is no postgres. Wait (at most 20 s) for it to be reaped.
 */
async function zombieGone(dataDir: string): Promise<void> {
  const pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  const isZombie = async () => /\) Z /.test(await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''));
  for (let waited = 0; waited < 20_000 && (await isZombie()); waited += 100) await sleep(100);
}

/** Where the cluster lives: the asked-for directory, unless the `postgres` user cannot reach it (root, private home). */
export function clusterDirFor(dataDir: string, log: (line: string) => void): string {
  if (!isRoot() || reachableByOthers(dataDir)) return dataDir;
  const moved = path.join('/var/lib/flashpay', createHash('sha256').update(dataDir).digest('hex').slice(0, 12), 'pg');
  log(`${dataDir} is not reachable by the postgres user; the embedded cluster lives in ${moved}`);
  return moved;
}

export function runToCompletion(command: string, args: string[], runAs: RunAs): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...runAs, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(command)} failed (${code}): ${output}`)),
    );
  });
}

export const newPassword = () => randomBytes(24).toString('base64url');

/** The password file of a cluster: beside its data directory, readable by this user only. */
export const passwordFileOf = (dataDir: string) => `${dataDir.replace(/[/\\]+$/, '')}.password`;

export async function writePassword(file: string, password: string): Promise<void> {
  // Its directory may not exist yet: a cluster moved out of a private checkout (clusterDirFor)
  // created its own directory elsewhere, not this one.
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  await chmod(file, 0o600); // an existing file keeps its old mode through writeFile
}

export async function initialise(initdb: string, dataDir: string, runAs: RunAs, password: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (runAs.uid !== undefined) await chown(dataDir, runAs.uid, runAs.gid ?? runAs.uid);
  const passwordFile = path.join(os.tmpdir(), `flashpay-pg-${process.pid}-${Date.now()}`);
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  if (runAs.uid !== undefined) await chown(passwordFile, runAs.uid, runAs.gid ?? runAs.uid);
  try {
    await runToCompletion(
      initdb,
      [
        `--pgdata=${dataDir}`,
        '--auth=password',
        `--username=${EMBEDDED_USER}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      runAs,
    );
  } finally {
    await rm(passwordFile, { force: true });
  }
}

/** A cluster made with the old constant password gets a random one, written before it is set. */
export async function rotateLegacyPassword(
  port: number,
  passwordFile: string,
  log: (line: string) => void,
): Promise<string> {
  const fresh = newPassword();
  await writePassword(passwordFile, fresh);
  const client = new pg.Client({
    connectionString: `postgres://${EMBEDDED_USER}:${LEGACY_PASSWORD}@127.0.0.1:${port}/postgres`,
  });
  await client.connect();
  try {
    await client.query(`ALTER ROLE ${EMBEDDED_USER} PASSWORD ${pg.escapeLiteral(fresh)}`);
  } finally {
    await client.end();
  }
  log(`the embedded PostgreSQL had the old constant password; it now has a random one in ${passwordFile}`);
  return fresh;
}
