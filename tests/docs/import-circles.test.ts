import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ESLint, Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, expect, it } from 'vitest';
import walls from '../../eslint/module-walls.js';

// The rule `flashpay/no-import-circles` (eslint/import-circles.js) on small trees planted on disk,
// where the rule reads the files a file imports, and on the repository's own src/.

const repo = path.resolve(import.meta.dirname, '../..');
const planted: string[] = [];

afterAll(async () => {
  for (const dir of planted) await rm(dir, { recursive: true, force: true });
});

/** A fresh root (the rule remembers a root's graph for a second) with `files` under it. */
async function plant(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'flashpay-circles-'));
  planted.push(root);
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  }
  return root;
}

function lint(root: string, file: string, code: string) {
  const linter = new Linter({ configType: 'flat', cwd: root });
  const config = {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { flashpay: walls },
    rules: { 'flashpay/no-import-circles': ['error', { root }] as Linter.RuleEntry },
  };
  return linter.verify(code, [config], path.join(root, file));
}

/** Every message of the rule over every file of a planted tree, as `file: message`. */
async function lintTree(root: string, files: Record<string, string>): Promise<string[]> {
  return Object.entries(files).flatMap(([file, code]) => lint(root, file, code).map((m) => `${file}: ${m.message}`));
}

describe('no import circles', () => {
  it('IC-01: a circle between two files is refused, at both imports, naming the circle', async () => {
    const files = {
      'src/shop/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
      'src/shop/b.ts': "import type { a } from './a.ts';\nexport const b = 1 as unknown as typeof a;\n",
    };
    const root = await plant(files);
    expect(await lintTree(root, files)).toEqual([
      "src/shop/a.ts: './b.ts' closes an import circle in src/shop/: a.ts → b.ts → a.ts",
      "src/shop/b.ts: './a.ts' closes an import circle in src/shop/: b.ts → a.ts → b.ts",
    ]);
  });

  it('IC-02: rooms of one module, and a module and an entry point above it, may not import each other in circles', async () => {
    // No file is on a circle of files here: create/one.ts → decide/two.ts, decide/three.ts → create/four.ts.
    const rooms = {
      'src/orders/create/one.ts': "export { two } from '../decide/two.ts';\n",
      'src/orders/create/four.ts': 'export const four = 4;\n',
      'src/orders/decide/two.ts': 'export const two = 2;\n',
      'src/orders/decide/three.ts': "import { four } from '../create/four.ts';\nexport const three = four;\n",
    };
    const root = await plant(rooms);
    expect(await lintTree(root, rooms)).toEqual([
      "src/orders/create/one.ts: '../decide/two.ts' closes an import circle in src/orders/: create → decide → create",
      "src/orders/decide/three.ts: '../create/four.ts' closes an import circle in src/orders/: decide → create → decide",
    ]);
    // The kernel climbing back up to the entry point's deps that import it.
    const climb = {
      'src/app.deps.ts': "import type { Db } from './platform/db.ts';\nexport interface AppDeps { db: Db }\n",
      'src/platform/db.ts': 'export type Db = object;\n',
      'src/platform/guard.ts':
        "import type { AppDeps } from '../app.deps.ts';\nexport const guard = (d: AppDeps) => d;\n",
    };
    const up = await plant(climb);
    expect(await lintTree(up, climb)).toEqual([
      "src/app.deps.ts: './platform/db.ts' closes an import circle in src/: app.deps.ts → platform → app.deps.ts",
      "src/platform/guard.ts: '../app.deps.ts' closes an import circle in src/: platform → app.deps.ts → platform",
    ]);
  });

  it('IC-03: a layered tree passes: rooms one way, a door re-exporting them, modules one way, dynamic imports', async () => {
    const files = {
      'src/app.ts':
        "import { pay } from './payments/index.ts';\nexport const app = () => import('./orders/index.ts').then(() => pay);\n",
      'src/platform/db.ts': 'export type Db = object;\n',
      'src/orders/index.ts':
        "export { create } from './create/create.ts';\nexport type { State } from './decide/types.ts';\n",
      'src/orders/create/create.ts': "import { decide } from '../decide/decide.ts';\nexport const create = decide;\n",
      'src/orders/decide/decide.ts':
        "import type { State } from './types.ts';\nimport type { Db } from '../../platform/db.ts';\nexport const decide = (s: State, d: Db) => [s, d];\n",
      'src/orders/decide/types.ts': "export type State = 'NEW';\n",
      'src/payments/index.ts': "import { create } from '../orders/index.ts';\nexport const pay = create;\n",
    };
    const root = await plant(files);
    expect(await lintTree(root, files)).toEqual([]);
    // The linted file's own imports are its text, not the disk's: an edit that closes a circle counts at once.
    const edited = "import { pay } from '../../payments/index.ts';\nexport const decide = pay;\n";
    expect(lint(root, 'src/orders/decide/decide.ts', edited).map((m) => m.message)).toEqual([
      "'../../payments/index.ts' closes an import circle in src/: orders → payments → orders",
    ]);
  });

  it('IC-04: src/ has no import circle wherever eslint.config.js turns the rule on', async () => {
    const eslint = new ESLint({ cwd: repo });
    const entries = await readdir(path.join(repo, 'src'), { withFileTypes: true, recursive: true });
    const files = entries
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => path.join(e.parentPath, e.name));
    const checked: string[] = [];
    const found: string[] = [];
    for (const file of files) {
      const config = (await eslint.calculateConfigForFile(file)) as { rules?: Record<string, unknown> } | undefined;
      const setting = config?.rules?.['flashpay/no-import-circles'];
      const level = Array.isArray(setting) ? setting[0] : setting;
      if (level === 0 || level === 'off' || level === undefined) continue;
      checked.push(file);
      const messages = lint(repo, path.relative(repo, file), await readFile(file, 'utf8'));
      const circles = messages.filter((m) => m.ruleId === 'flashpay/no-import-circles');
      found.push(...circles.map((m) => `${path.relative(repo, file)}:${m.line} ${m.message}`));
    }
    expect(found).toEqual([]);
    // The rule is on for nearly all of src/ (not quietly off everywhere).
    expect(checked.length).toBeGreaterThan(files.length * 0.75);
  });
});
