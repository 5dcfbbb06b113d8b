import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveStack, type LiveStack } from '../cli/live-stack.ts';
import { packDependencies } from './pack.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const TSC = path.join(root, 'node_modules/typescript/bin/tsc');
const README = path.join(root, 'packages/client/README.md');

/** The README's fenced blocks of one language, in order, as written. */
function blocks(readme: string, language: string): string[] {
  return [...readme.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1] ?? '');
}

/** tsc's output (it prints its diagnostics on stdout) and whether it passed. */
async function tsc(cwd: string, args: string[] = []): Promise<{ ok: boolean; out: string }> {
  return run(process.execPath, [TSC, ...args], { cwd }).then(
    ({ stdout }) => ({ ok: true, out: stdout }),
    (error: { stdout?: string }) => ({ ok: false, out: error.stdout ?? '' }),
  );
}

// The client's README as a newcomer follows it: the packed tarball installed offline into a fresh
// project, `tsc --init`'s own tsconfig with the one edit the README asks for, every TypeScript
// snippet compiled as written, and the first program run against a started flashpay.
describe('@flashpay/client README, followed as written (CR)', () => {
  let stack: LiveStack;
  let work = '';
  let tarball = '';
  let readme = '';
  let dependencies: Record<string, string> = {};
  let typesNode = '';
  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'flashpay-readme-'));
    readme = await readFile(README, 'utf8');
    const { stdout } = await run('npm', ['pack', '-w', '@flashpay/client', '--pack-destination', work], { cwd: root });
    tarball = path.join(work, stdout.trim().split('\n').pop() ?? '');
    const types = (await run('npm', ['pack', path.join(root, 'node_modules/@types/node'), '--pack-destination', work]))
      .stdout;
    dependencies = {
      ...(await packDependencies('@flashpay/client', work)),
      ...(await packDependencies('@types/node', work)),
    };
    typesNode = `file:${path.join(work, types.trim().split('\n').pop() ?? '')}`;
    stack = await startLiveStack({ prefix: 'flashpay-cr-' });
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
    await rm(work, { recursive: true, force: true });
  });

  /** `npm init -y`, the README's installs (offline, from the tarballs), `tsc --init`. */
  async function project(name: string): Promise<string> {
    const dir = path.join(work, name);
    await mkdir(dir);
    await run('npm', ['init', '-y'], { cwd: dir });
    const manifest = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
    manifest.overrides = dependencies;
    await writeFile(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
    const offline = ['--offline', '--no-audit', '--no-fund'];
    await run('npm', ['install', ...offline, `file:${tarball}`], { cwd: dir });
    await run('npm', ['install', ...offline, '-D', typesNode], { cwd: dir });
    await run(process.execPath, [TSC, '--init'], { cwd: dir });
    const config = await readFile(path.join(dir, 'tsconfig.json'), 'utf8');
    // The README's one edit, as tsc --init's own comment has it for Node.js.
    expect(config).toContain('"types": [],');
    await writeFile(path.join(dir, 'tsconfig.json'), config.replace('"types": [],', '"types": ["node"],'));
    return dir;
  }

  it('CR-01: every TypeScript snippet compiles as written under tsc --init’s strict defaults, and the first program runs twice against a live stack', async () => {
    // The steps the README gives are the ones taken here.
    const shell = blocks(readme, 'sh').join('\n');
    for (const step of [
      'npm init -y && npm pkg set type=module',
      'npm install @flashpay/client',
      'npm install -D typescript @types/node',
      'npx tsc --init',
      'npx tsc && node first.js',
    ])
      expect(shell).toContain(step);
    expect(readme).toContain('replace\n`"types": []` with `"types": ["node"]`');

    const dir = await project('esm');
    await run('npm', ['pkg', 'set', 'type=module'], { cwd: dir });
    const snippets = blocks(readme, 'ts');
    expect(snippets.length).toBeGreaterThanOrEqual(4);
    const first = snippets.findIndex((s) => s.includes('const settled = await alice.waitForOrder'));
    expect(first).toBe(0);
    for (const [i, snippet] of snippets.entries())
      await writeFile(path.join(dir, i === first ? 'first.ts' : `snippet-${i}.ts`), snippet);
    const compiled = await tsc(dir);
    expect(compiled.out).toBe('');
    expect(compiled.ok).toBe(true);

    const env = {
      ...process.env,
      FLASHPAY_URL: stack.api,
      ADMIN: await stack.token('acme', 'ops', 'admin'),
      ALICE: await stack.token('acme', 'alice'),
    };
    const runs: string[] = [];
    for (let i = 0; i < 2; i++) runs.push((await run(process.execPath, ['first.js'], { cwd: dir, env })).stdout);
    // What the README shows it prints, the second run finding its SKU already there.
    const [shown] = blocks(readme, 'text').filter((b) => b.includes('pay answered'));
    expect(shown).toBe('ord_…: pay answered PAID, the order is PAID\ntee-first: 99 of 100 left, 1 sold\n');
    expect(runs[0]).toMatch(
      /^ord_\w+: pay answered (PAID|UNKNOWN), the order is PAID\ntee-first: 99 of 100 left, 1 sold\n$/,
    );
    expect(runs[1]).toMatch(
      /^ord_\w+: pay answered (PAID|UNKNOWN), the order is PAID\ntee-first: 98 of 100 left, 2 sold\n$/,
    );
    const orders = await stack.database.pool.query<{ status: string }>('SELECT status FROM orders WHERE user_id = $1', [
      'alice',
    ]);
    expect(orders.rows).toEqual([{ status: 'PAID' }, { status: 'PAID' }]);
  }, 300_000);

  it('CR-02: in the CommonJS project `npm init -y` makes, tsc gives the very error the README quotes', async () => {
    const dir = await project('cjs');
    const [first = ''] = blocks(readme, 'ts');
    await writeFile(path.join(dir, 'first.ts'), first);
    const compiled = await tsc(dir);
    expect(compiled.ok).toBe(false);
    const [quoted = ''] = blocks(readme, 'text').filter((b) => b.includes('TS1295'));
    const lines = compiled.out.trim().split('\n');
    for (const line of quoted.trim().split('\n')) expect(lines).toContain(line);
    expect(readme).toContain('with 7 errors, one per imported name and one per top-level `await`');
    expect(lines.filter((l) => / error TS\d+: /.test(l))).toHaveLength(7);
  }, 240_000);

  it('CR-03: the tarball ships the README and the LICENSE as they are in the repository', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    expect(stdout.split('\n')).toEqual(expect.arrayContaining(['package/README.md', 'package/LICENSE']));
    expect((await run('tar', ['-xzOf', tarball, 'package/README.md'])).stdout).toBe(readme);
    const license = (await run('tar', ['-xzOf', tarball, 'package/LICENSE'])).stdout;
    expect(license).toMatch(/^MIT License\n/);
    const manifest = JSON.parse((await run('tar', ['-xzOf', tarball, 'package/package.json'])).stdout) as {
      license: string;
    };
    expect(manifest.license).toBe('MIT');
  });
});
