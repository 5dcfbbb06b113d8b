import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/platform/errors.ts';
import { mermaidDiagram } from '../../src/orders/decide/states.ts';
import { decisionTableMarkdown } from '../../src/orders/decide/table.ts';
import { GLOBAL_CLASSES, ORDER_CLASSES } from '../../src/reconcile/reconcile.rules.ts';

const doc = (name: string) => readFile(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

// The docs are part of the contract: these fail when code and docs drift apart.
describe('docs agree with the code', () => {
  it('every error code is listed in docs/errors.md with its HTTP status', async () => {
    const text = await doc('errors.md');
    for (const [code, status] of Object.entries(ERROR_STATUS)) expect(text).toContain(`| \`${code}\` | ${status} |`);
  });

  it('docs/state-machine.md holds the diagram generated from the transition table', async () => {
    expect(await doc('state-machine.md')).toContain(`\`\`\`mermaid\n${mermaidDiagram()}\n\`\`\``);
  });

  it('docs/reconciliation.md describes every reconciliation class', async () => {
    const text = await doc('reconciliation.md');
    for (const c of [...ORDER_CLASSES, ...GLOBAL_CLASSES]) expect(text).toContain(c);
  });

  it('docs/state-machine.md holds the decision table generated from decide()', async () => {
    expect(await doc('state-machine.md')).toContain(decisionTableMarkdown());
  });

  it('the README configuration table lists every environment variable the code reads', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const table = readme.slice(readme.indexOf('## Configuration'));
    const src = new URL('../../src/', import.meta.url);
    const names = new Set<string>();
    for (const entry of await readdir(src, { recursive: true })) {
      if (!entry.endsWith('.ts')) continue;
      const text = await readFile(new URL(entry, src), 'utf8');
      for (const [, name] of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)) names.add(name ?? '');
      for (const [, name] of text.matchAll(/\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g)) names.add(name ?? '');
    }
    expect(names.size).toBeGreaterThan(10);
    expect([...names].filter((name) => !table.includes(`\`${name}\``))).toEqual([]);
  });

  it('docs/architecture.md maps every module folder under src/', async () => {
    const text = await doc('architecture.md');
    const dirs = (await readdir(new URL('../../src/', import.meta.url), { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(dirs.filter((d) => !text.includes(`\`src/${d}/\``))).toEqual([]);
  });
});
