// The compiled copy of the sources (issue 49): `scripts/build-dist.ts` writes it to build/dist once
// per test run, and the bin starts it instead of going through tsx when it is current — a boot
// without tsx's loader costs about half. Current means: the same source files, none changed since.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = path.join(ROOT, 'build', 'dist');
export const STAMP = path.join(DIST, 'stamp.json');
/** What is compiled: every TypeScript file of these folders, at the same place under build/dist. */
export const SOURCES = ['src', 'packages/client/src', 'bench'];

function walk(dir, found) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(file, found);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(file);
  }
  return found;
}

/** The source files (relative to the root) and a stamp of their state: count and newest change. */
export function sourcesNow() {
  const files = SOURCES.flatMap((dir) => walk(path.join(ROOT, dir), []));
  const newest = files.reduce((max, file) => Math.max(max, statSync(file).mtimeMs), 0);
  return { files: files.map((f) => path.relative(ROOT, f)), stamp: { count: files.length, newest } };
}

/** True when build/dist was compiled from the sources as they are now. */
export function distIsCurrent() {
  let built;
  try {
    built = JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return false;
  }
  const { stamp } = sourcesNow();
  return built.count === stamp.count && built.newest === stamp.newest;
}
