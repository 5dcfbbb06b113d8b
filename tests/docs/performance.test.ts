import { readdir, readFile, stat } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFile(new URL(path, root), 'utf8');
const exists = (path: string) => stat(new URL(path, root)).then(
  () => true,
  () => false,
);

/** Every hand-written text file that may name a doc: code, tests, bench, scripts, the docs and the README. */
async function textFiles(): Promise<string[]> {
  const files = ['README.md'];
  for (const dir of ['src', 'bench', 'tests', 'scripts', 'web', 'bin', 'eslint', 'docs']) {
    for (const entry of await readdir(new URL(`${dir}/`, root), { recursive: true })) {
      if (/\.(ts|js|md|html)$/.test(entry) && !entry.includes('node_modules')) files.push(`${dir}/${entry}`);
    }
  }
  return files;
}

/** The journal's sections, by their number: `## 17. …` → `17`, `## 8B. …` → `8B`. */
async function journalSections(): Promise<Set<string>> {
  const journal = await read('docs/benchmarks/journal.md');
  return new Set([...journal.matchAll(/^## (\d+[A-Z]?)\. /gm)].map(([, id]) => id ?? ''));
}

const sectionRefs = (text: string) => [...text.matchAll(/§(\d+[A-Z]?)/g)].map(([, id]) => id ?? '');

// Results apart from the notebook (STYLE 22): docs/performance.md is today's figures, the journal is
// how they were reached. These fail when the page, the journal, the bench and the pointers drift.
describe('docs/performance.md and the benchmark journal', () => {
  it('PF-01: the page is under 200 lines and links the journal; the README links the page', async () => {
    const page = await read('docs/performance.md');
    expect(page.split('\n').length).toBeLessThan(200);
    expect(page).toContain('](benchmarks/journal.md)');
    const readme = await read('README.md');
    expect(readme.slice(readme.indexOf('## Performance'))).toContain('](docs/performance.md)');
  });

  it('PF-02: every part the bench offers (--only) has its command on the page', async () => {
    const options = await read('bench/options.ts');
    const parts = /--only ([a-z0-9|]+)/.exec(options)?.[1]?.split('|') ?? [];
    expect(parts.length).toBeGreaterThanOrEqual(6);
    const page = await read('docs/performance.md');
    expect(parts.filter((part) => !page.includes(`npm run bench -- --only ${part}`))).toEqual([]);
  });

  it('PF-03: every goal the bench prints (P1…P7) has a row in the table of today', async () => {
    const names = new Set<string>();
    for (const entry of await readdir(new URL('bench/', root))) {
      if (entry.endsWith('.ts')) for (const [name] of (await read(`bench/${entry}`)).matchAll(/\bP[1-9]\b/g)) names.add(name);
    }
    expect(names.size).toBeGreaterThanOrEqual(7);
    const page = await read('docs/performance.md');
    expect([...names].filter((name) => !page.includes(`| **${name}** `))).toEqual([]);
  });

  it('PF-04: every § the page, the index or a pointer to the journal names is a section of the journal', async () => {
    const sections = await journalSections();
    expect(sections.size).toBeGreaterThan(20);
    const missing: string[] = [];
    for (const file of ['docs/performance.md', 'docs/benchmarks/README.md']) {
      for (const id of sectionRefs(await read(file))) if (!sections.has(id)) missing.push(`${file}: §${id}`);
    }
    for (const file of await textFiles()) {
      for (const line of (await read(file)).split('\n')) {
        if (!line.includes('benchmarks/journal.md')) continue;
        for (const id of sectionRefs(line)) if (!sections.has(id)) missing.push(`${file}: §${id}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("PF-05: the journal's index lists every section of the journal", async () => {
    const index = new Set(sectionRefs(await read('docs/benchmarks/README.md')));
    expect([...(await journalSections())].filter((id) => !index.has(id))).toEqual([]);
  });

  it('PF-06: every docs/ file that code, tests, bench or docs name exists, and every relative link in the docs resolves', async () => {
    const missing: string[] = [];
    for (const file of await textFiles()) {
      const text = await read(file);
      for (const [path] of text.matchAll(/\bdocs\/[\w./-]+\.(?:md|png)\b/g)) {
        if (!(await exists(path))) missing.push(`${file}: ${path}`);
      }
      if (!file.endsWith('.md')) continue;
      for (const [, target] of text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
        // A scheme, or a path the running server serves (the runbook's `/ops#…`, checked by PR-02).
        if (target === undefined || /^[a-z]+:/.test(target) || target.startsWith('/')) continue;
        const resolved = new URL(target, new URL(file, root));
        if (!(await stat(resolved).then(() => true, () => false))) missing.push(`${file}: (${target})`);
      }
    }
    expect(missing).toEqual([]);
  });
});
