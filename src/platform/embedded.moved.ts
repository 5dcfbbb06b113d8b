import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isRoot, reachableByOthers } from './embedded.binaries.ts';
import { alive, findRunningPostmaster } from './embedded.files.ts';

// Clusters that root keeps under /var/lib/flashpay because the `postgres` user cannot reach the
// asked-for directory (clusterDirFor). Each knows where it came from, both ways: `origin.json`
// beside its `pg` names the asked-for directory, and `<dataDir>.moved-to` beside that directory's
// password file names the cluster. A cluster's lifetime follows its origin: once the marker is
// gone (its checkout or temp folder deleted) and no postgres runs in it, it is an orphan and is
// removed (issue 56). Never a running one: its postmaster.pid names a live postgres process.
export const MOVED_ROOT = '/var/lib/flashpay';
const ORIGIN_FILE = 'origin.json';
/** The directories clusterDirFor makes: the first 12 hex digits of sha256(dataDir). */
const MOVED_NAME = /^[0-9a-f]{12}$/;
/** Clusters moved before origins were recorded are removed only by `prune --legacy`, and only once idle this long. */
export const LEGACY_IDLE_MS = 60 * 60_000;

export type MovedState = 'running' | 'in use' | 'orphaned' | 'unknown origin';

export interface MovedCluster {
  /** `/var/lib/flashpay/<hash>`: what a prune removes. */
  dir: string;
  /** The directory it stands for; undefined when it was moved before origins were recorded. */
  origin?: string;
  state: MovedState;
  /** The postmaster's pid when one runs in it. */
  pid?: number;
  /** Newest of the directory's and its data directory's modification times. */
  modifiedAt: Date;
  sizeBytes?: number;
}

export const markerOf = (dataDir: string) => `${dataDir.replace(/[/\\]+$/, '')}.moved-to`;
const originFileOf = (clusterDir: string) => path.join(path.dirname(clusterDir), ORIGIN_FILE);

/**
 * Records both directions before the cluster is made or started: the marker first, so that a
 * cluster with an origin file always had its marker and a concurrent prune never sees one half.
 */
export async function recordOrigin(dataDir: string, clusterDir: string): Promise<void> {
  await mkdir(path.dirname(dataDir), { recursive: true, mode: 0o700 });
  await writeFile(markerOf(dataDir), `${clusterDir}\n`, { mode: 0o600 });
  await mkdir(path.dirname(clusterDir), { recursive: true, mode: 0o755 });
  await writeFile(originFileOf(clusterDir), `${JSON.stringify({ origin: dataDir })}\n`, { mode: 0o644 });
}

async function readOrigin(dir: string): Promise<string | undefined> {
  const text = await readFile(path.join(dir, ORIGIN_FILE), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const origin = (JSON.parse(text) as { origin?: unknown }).origin;
    return typeof origin === 'string' ? origin : undefined;
  } catch {
    return undefined;
  }
}

async function examine(dir: string): Promise<MovedCluster> {
  const clusterDir = path.join(dir, 'pg');
  const origin = await readOrigin(dir);
  const pid = await findRunningPostmaster(clusterDir);
  const times = await Promise.all(
    [dir, clusterDir].map((p) =>
      stat(p).then(
        (s) => s.mtimeMs,
        () => 0,
      ),
    ),
  );
  const modifiedAt = new Date(Math.max(...times));
  if (pid !== undefined) return { dir, origin, state: 'running', pid, modifiedAt };
  if (origin === undefined) return { dir, state: 'unknown origin', modifiedAt };
  const marker = await readFile(markerOf(origin), 'utf8').catch(() => '');
  return { dir, origin, state: marker.trim() === clusterDir ? 'in use' : 'orphaned', modifiedAt };
}

/** Bytes under `target`, symlinks not followed; files that vanish meanwhile count nothing. */
export async function sizeOf(target: string): Promise<number> {
  const info = await lstat(target).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory()) return info.size;
  const entries = await readdir(target).catch(() => [] as string[]);
  let total = info.size;
  for (const entry of entries) total += await sizeOf(path.join(target, entry));
  return total;
}

/** Every moved cluster under `root`, sorted by directory; `withSize` measures each (a walk of its files). */
export async function listMovedClusters(options: { root?: string; withSize?: boolean } = {}): Promise<MovedCluster[]> {
  const root = options.root ?? MOVED_ROOT;
  const names = (await readdir(root).catch(() => [] as string[])).filter((name) => MOVED_NAME.test(name)).sort();
  const clusters = await Promise.all(names.map((name) => examine(path.join(root, name))));
  if (options.withSize) for (const c of clusters) c.sizeBytes = await sizeOf(c.dir);
  return clusters;
}

export interface PruneOptions {
  root?: string;
  /** Also remove clusters of unknown origin idle for LEGACY_IDLE_MS (an operator's choice, never automatic). */
  legacy?: boolean;
  now?: number;
}

const prunable = (c: MovedCluster, options: PruneOptions) =>
  c.state === 'orphaned' ||
  (options.legacy === true &&
    c.state === 'unknown origin' &&
    (options.now ?? Date.now()) - c.modifiedAt.getTime() >= LEGACY_IDLE_MS);

/**
 * Removes orphaned moved clusters (and with `legacy`, idle ones of unknown origin); returns what
 * it removed, with sizes. Each is looked at again just before it goes: a postmaster that started
 * meanwhile, or a marker written meanwhile, keeps it.
 */
export async function pruneMovedClusters(options: PruneOptions = {}): Promise<MovedCluster[]> {
  const removed: MovedCluster[] = [];
  for (const candidate of await listMovedClusters({ root: options.root })) {
    if (!prunable(candidate, options)) continue;
    const now = await examine(candidate.dir);
    if (!prunable(now, options)) continue;
    now.sizeBytes = await sizeOf(now.dir);
    await rm(now.dir, { recursive: true, force: true });
    removed.push(now);
  }
  return removed;
}

/** What a start does first, as root: orphans go, a line each; a failure to prune never fails a start. */
export async function pruneOrphansQuietly(log: (line: string) => void): Promise<void> {
  if (!isRoot()) return;
  try {
    for (const c of await pruneMovedClusters())
      log(`removed the orphaned embedded cluster ${c.dir} (${formatBytes(c.sizeBytes ?? 0)}): ${c.origin} is gone`);
    for (const dir of await pruneScratchDirs()) log(`removed ${dir}: the run that made it is gone`);
  } catch (error) {
    log(`could not prune orphaned embedded clusters in ${MOVED_ROOT}: ${(error as Error).message}`);
  }
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`;
  if (bytes >= 1e6) return `${Math.round(bytes / 1e6)} MB`;
  return `${Math.round(bytes / 1e3)} kB`;
}

/** Where throwaway clusters (the test run's template, the bench's database) are made, as root. */
export const SCRATCH_ROOT = '/var/tmp';
const SCRATCH_NAME = /^flashpay-[a-z0-9]+-[A-Za-z0-9]{6}$/;
const OWNER_FILE = 'owner.pid';

/**
 * A temporary directory of our own for a throwaway cluster, which the `postgres` user can reach
 * from the start, so it is never moved: as root under /var/tmp, 0755 (as startEmbedded would make
 * it; the password file beside the cluster is root's, 0600), else the usual temp dir. It names its
 * owner (this pid), so that one left by a killed run can be swept; the caller removes it.
 */
export async function scratchDir(kind: string): Promise<string> {
  if (!isRoot()) return mkdtemp(path.join(os.tmpdir(), `flashpay-${kind}-`));
  const dir = await mkdtemp(path.join(SCRATCH_ROOT, `flashpay-${kind}-`));
  await chmod(dir, 0o755);
  await writeFile(path.join(dir, OWNER_FILE), `${process.pid}\n`, { mode: 0o644 });
  if (!reachableByOthers(path.join(dir, 'pg'))) throw new Error(`${dir} is not reachable by the postgres user`);
  return dir;
}

/**
 * Scratch directories of runs that were killed (no teardown, no finally): their owner is dead and
 * no postgres runs in them. One with no owner file is not ours, or is being made: kept.
 */
export async function pruneScratchDirs(root = SCRATCH_ROOT): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(root).catch(() => [] as string[])) {
    if (!SCRATCH_NAME.test(name)) continue;
    const dir = path.join(root, name);
    const owner = Number((await readFile(path.join(dir, OWNER_FILE), 'utf8').catch(() => '')).trim());
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) continue;
    if ((await findRunningPostmaster(path.join(dir, 'pg'))) !== undefined) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
