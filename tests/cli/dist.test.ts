import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distIsCurrent } from '../../bin/dist.js';
import { ROOT } from '../../src/platform/root.ts';

// Issue 49 (BD-01..03): `flashpay` boots the compiled copy in build/dist only while it is the
// sources as they are; a source changed, added or removed since the compile sends it back to tsx,
// so a developer never runs stale code. A small checkout of its own (the real bin/ and build
// script, a main that says which file it is), so the suite's own build/dist is never touched.
const run = promisify(execFile);

describe('the bin runs build/dist only when it is current (issue 49)', () => {
  let root = '';
  const main = () => path.join(root, 'src', 'cli', 'main.ts');
  const flashpay = async (env: Record<string, string> = {}) =>
    (
      await run(process.execPath, [path.join(root, 'bin', 'flashpay.js')], { env: { ...process.env, ...env } })
    ).stdout.trim();
  const build = () =>
    run(process.execPath, ['--import', 'tsx', path.join(root, 'scripts', 'build-dist.ts')], { cwd: root });

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'flashpay-dist-'));
    await cp(path.join(ROOT, 'bin'), path.join(root, 'bin'), { recursive: true });
    await mkdir(path.join(root, 'scripts'));
    await cp(path.join(ROOT, 'scripts', 'build-dist.ts'), path.join(root, 'scripts', 'build-dist.ts'));
    await cp(path.join(ROOT, 'package.json'), path.join(root, 'package.json'));
    await symlink(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'));
    for (const dir of ['src/cli', 'packages/client/src', 'bench'])
      await mkdir(path.join(root, dir), { recursive: true });
    await writeFile(main(), "import { who } from './who.ts';\nprocess.stdout.write(who());\n");
    await writeFile(path.join(root, 'src', 'cli', 'who.ts'), 'export const who = (): string => import.meta.url;\n');
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('BD-01: after a compile the bin starts build/dist (main one bundle, every file also compiled alone with its .ts imports rewritten); FLASHPAY_TSX=1 forces tsx', async () => {
    expect(await flashpay()).toMatch(/\/src\/cli\/who\.ts$/);
    await build();
    // who.ts is inside main's bundle: its module is main.js.
    expect(await flashpay()).toBe(`file://${root}/build/dist/src/cli/main.js`);
    const alone = await readFile(path.join(root, 'build', 'dist', 'src', 'cli', 'main.js'), 'utf8');
    expect(alone).not.toContain('./who.ts');
    expect(await readFile(path.join(root, 'build', 'dist', 'src', 'cli', 'who.js'), 'utf8')).toContain(
      'import.meta.url',
    );
    expect(await flashpay({ FLASHPAY_TSX: '1' })).toMatch(/\/src\/cli\/who\.ts$/);
  });

  it('BD-02: a source changed after the compile sends the bin back to tsx until the next compile', async () => {
    await build();
    const later = new Date(Date.now() + 5_000);
    await utimes(main(), later, later);
    expect(await flashpay()).toMatch(/\/src\/cli\/who\.ts$/);
    await build();
    expect(await flashpay()).toMatch(/\/build\/dist\/src\/cli\/main\.js$/);
  });

  it('BD-03: a source added or removed after the compile does too', async () => {
    await build();
    const added = path.join(root, 'bench', 'added.ts');
    await writeFile(added, 'export {};\n');
    await utimes(added, new Date(0), new Date(0)); // older than every other file: only the count tells
    expect(await flashpay()).toMatch(/\/src\/cli\/who\.ts$/);
    await build();
    await rm(added);
    expect(await flashpay()).toMatch(/\/src\/cli\/who\.ts$/);
  });

  it('BD-04: this run compiled the checkout once (global setup), so every flashpay it spawns boots build/dist', () => {
    expect(distIsCurrent()).toBe(true);
  });
});

describe('the compiled copy finds the checkout as the sources do (issue 49)', () => {
  it('BD-05: no file of src/ or bench/ builds a path from its own place but src/platform/root.ts (build/dist sits two folders deeper)', async () => {
    const { sourcesNow } = await import('../../bin/dist.js');
    const relative = /import\.meta\.url\)?\)?,\s*['"`]\.\.|new URL\(\s*['"`]\.\.\/[^'"`]*['"`],\s*import\.meta\.url/;
    const offenders: string[] = [];
    for (const file of sourcesNow().files) {
      if (file === path.join('src', 'platform', 'root.ts')) continue;
      if (relative.test(await readFile(path.join(ROOT, file), 'utf8'))) offenders.push(file);
    }
    expect(offenders).toEqual([]);
    // The control: the form recovery.provider.ts had is caught.
    expect(relative.test("path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/flashpay.js')")).toBe(
      true,
    );
    expect(relative.test("new URL('../../migrations/153_channel_accounts.sql', import.meta.url)")).toBe(true);
  });
});
