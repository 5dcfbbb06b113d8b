import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

/**
 * The tarballs of a package's dependencies, packed from the repository's node_modules (no
 * network), as `overrides` for an offline `npm install` of the packed client.
 */
export async function packDependencies(
  name: string,
  into: string,
  seen = new Set<string>(),
): Promise<Record<string, string>> {
  const manifest = JSON.parse(await readFile(path.join(root, 'node_modules', name, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const found: Record<string, string> = {};
  for (const dependency of Object.keys(manifest.dependencies ?? {})) {
    if (seen.has(dependency)) continue;
    seen.add(dependency);
    const { stdout } = await run('npm', [
      'pack',
      path.join(root, 'node_modules', dependency),
      '--pack-destination',
      into,
    ]);
    found[dependency] = `file:${path.join(into, stdout.trim().split('\n').pop() ?? '')}`;
    Object.assign(found, await packDependencies(dependency, into, seen));
  }
  return found;
}
