import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import walls from '../../eslint/module-walls.js';

const root = path.resolve(import.meta.dirname, '../..');

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(root, dir), { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
}

function lint(file: string, code: string) {
  const linter = new Linter({ configType: 'flat', cwd: root });
  return linter.verify(code, [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser }, plugins: { flashpay: walls }, rules: { 'flashpay/module-walls': ['error', { root }] } }], path.join(root, file));
}

const domainOf = (file: string) => path.relative(path.join(root, 'src'), file).split(path.sep)[0];

describe('module walls', () => {
  it('the ESLint rule refuses an import past another module’s index.ts, and allows the index, own files and the kernel', () => {
    const wrong = lint('src/payments/x.ts', "import { transition } from '../orders/orders.repo.ts';\nexport const t = transition;\n");
    expect(wrong.map((m) => m.ruleId)).toEqual(['flashpay/module-walls']);
    expect(wrong[0]?.message).toContain('src/orders/index.ts');
    expect(lint('bench/x.ts', "export { reserve } from '../src/stock/reservations/repo.ts';\n")).toHaveLength(1);
    for (const ok of ["import { applyOrderEvent } from '../orders/index.ts';", "import { settle } from './settle.ts';", "import { inTx } from '../platform/db.ts';"]) {
      expect(lint('src/payments/x.ts', `${ok}\n`)).toEqual([]);
    }
  });

  it('domains depend on each other without cycles', async () => {
    const edges = new Map<string, Set<string>>();
    for (const file of await sourceFiles('src')) {
      const from = domainOf(file);
      if (!from || from.endsWith('.ts') || from === 'platform') continue;
      for (const [, spec] of (await readFile(file, 'utf8')).matchAll(/from '(\.[^']+)'/g)) {
        const to = domainOf(path.resolve(path.dirname(file), spec ?? ''));
        if (to && to !== from && !to.endsWith('.ts') && to !== 'platform') (edges.get(from) ?? edges.set(from, new Set()).get(from))?.add(to);
      }
    }
    const cycles: string[] = [];
    const visit = (node: string, trail: string[]) => {
      if (trail.includes(node)) return void cycles.push([...trail.slice(trail.indexOf(node)), node].join(' -> '));
      for (const next of edges.get(node) ?? []) visit(next, [...trail, node]);
    };
    for (const node of edges.keys()) visit(node, []);
    expect(cycles).toEqual([]);
  });

  it('order statuses are written and stock is moved only inside src/orders and src/stock', async () => {
    const offenders: string[] = [];
    for (const file of await sourceFiles('src')) {
      const domain = domainOf(file);
      if (domain === 'orders' || domain === 'stock') continue;
      const text = await readFile(file, 'utf8');
      if (/UPDATE\s+(orders|reservations|skus|user_holdings)\b|INSERT\s+INTO\s+(orders|reservations|order_transitions)\b/i.test(text)) offenders.push(path.relative(root, file));
      if (/\b(transition|tryConfirm|tryRelease|reserve)\(/.test(text)) offenders.push(path.relative(root, file));
    }
    expect(offenders).toEqual([]);
  });
});
