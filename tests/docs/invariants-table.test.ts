import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { MUTATIONS } from '../../src/platform/mutations.ts';

// Issue 55: the invariants table of docs/architecture.md says which test proves what, and which
// claims were seen failing without their guard. Both are promises: every test id it names is the
// id of a test that exists, and every "fails without" claim names a control that runs or says it
// was measured once, by hand, and when.
const root = new URL('../../', import.meta.url);

/** The invariants table: from its heading to the next second-level heading. */
async function invariantsTable(): Promise<string[]> {
  const text = await readFile(new URL('docs/architecture.md', root), 'utf8');
  const start = text.indexOf('## Invariants and the test that proves each');
  expect(start).toBeGreaterThan(0);
  const end = text.indexOf('\n## ', start + 3);
  return text
    .slice(start, end === -1 ? undefined : end)
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| invariant') && !line.startsWith('|---'));
}

/** A test id as the table writes them: `C29-08`, `F-02b`, `MB-NC1`, `OT1`, ranges `PB-01..06`, `RC-01/02`, `OT1–3`. */
const ID = /\b([A-Z][A-Z0-9]*)(-?)([A-Z]*)(\d+)([a-z]?)((?:(?:\.\.|–|\/)\d+)?)\b/g;

/** The ids a piece of the table names, ranges spelled out (`PB-01..03` → PB-01, PB-02, PB-03). */
export function idsIn(text: string): string[] {
  const ids: string[] = [];
  for (const m of text.matchAll(ID)) {
    const [, head = '', dash = '', mid = '', digits = '', suffix = '', range = ''] = m;
    // Only ids: a dash or a known dashless family (OT1, RP1); not `P3`, `UTF-8`, `CHECK`, `ANY 1`.
    if (!dash && !/^(OT|RP)$/.test(head)) continue;
    if (/^(UTF|SHA|ISO|RFC)$/.test(head)) continue;
    const base = `${head}${dash}${mid}`;
    ids.push(`${base}${digits}${suffix}`);
    if (!range) continue;
    const last = Number(range.slice(range[0] === '.' ? 2 : 1));
    for (let n = Number(digits) + 1; n <= last; n++) ids.push(`${base}${String(n).padStart(digits.length, '0')}`);
  }
  return ids;
}

/** Every title given to it(), describe(), test() and the suite's wrappers (browserIt, brokerTest), in every test file. */
async function testTitles(): Promise<string> {
  const titles: string[] = [];
  const call = /\b(?:it|describe|test|browserIt|brokerTest)(?:\.\w+)*(?:\([^()]*\))?\(\s*(['"`])((?:\\.|(?!\1)[\s\S])*)\1/g;
  for (const entry of await readdir(new URL('tests/', root), { recursive: true })) {
    if (!entry.endsWith('.test.ts')) continue;
    const text = await readFile(new URL(`tests/${entry}`, root), 'utf8');
    for (const m of text.matchAll(call)) titles.push(m[2] ?? '');
  }
  return titles.join('\n');
}

describe('docs/architecture.md invariants table', () => {
  it('DI-01 every test id the table names is in the title of a test or a describe block', async () => {
    const rows = await invariantsTable();
    const titles = await testTitles();
    const named = [...new Set(rows.flatMap((row) => idsIn(row.split(' | ').slice(-1)[0] ?? '')))];
    // 175 ids on 2026-12-07; the table only grows. Fewer means the parser stopped seeing them.
    expect(named.length).toBeGreaterThanOrEqual(175);
    expect(named.filter((id) => !titled(titles, id))).toEqual([]);
  });

  it('DI-02 the id check is not vacuous: ranges are spelled out, and an id no test carries is missing', async () => {
    expect(idsIn('(PB-01..03; RC-01/02; OT1–3; F-02b, MB-NC1) on UTF-8, P3')).toEqual([
      'PB-01', 'PB-02', 'PB-03', 'RC-01', 'RC-02', 'OT1', 'OT2', 'OT3', 'F-02b', 'MB-NC1',
    ]);
    const titles = await testTitles();
    expect(titled(titles, 'CL-01')).toBe(true);
    expect(titled(titles, 'CL-0')).toBe(false);
    expect(titled(titles, 'ZZ-99')).toBe(false);
    // The claim finder sees each way the table words a negative result, and not a plain sentence.
    const claims = [
      'fails without its change',
      'both fail if the refill is skipped',
      'SH-01/02 fail with the FULFILLED check off',
      'each fails with its guard removed',
      'both fail on the code before',
      '20,157 without the index',
      '56 spellings reached it before the fix',
      'Fail without: no prune at start',
    ];
    expect(claims.filter((c) => !CLAIM.test(c))).toEqual([]);
    expect(CLAIM.test('one charge each, every key replays')).toBe(false);
  });

  it('DI-03 every "fails without" claim names a control test that runs, or says when it was measured by hand', async () => {
    const titles = await testTitles();
    const unproven: string[] = [];
    for (const row of await invariantsTable()) {
      const provedBy = row.split(' | ').slice(-1)[0] ?? '';
      if (!CLAIM.test(provedBy)) continue;
      const measured = /measured once, \d{4}-\d{2}-\d{2}/.test(provedBy);
      const control = [...provedBy.matchAll(/control[^|]*?\(?([A-Z][A-Z0-9]*-[A-Z0-9]+)/g)].some((m) =>
        titled(titles, m[1] ?? ''),
      );
      if (!measured && !control) unproven.push(idsIn(provedBy).join(' '));
    }
    // Every claim has its control or its date (issue 55: the last three undated claims, PG-02,
    // QA-04 and CB-05, got controls PG-02b, QA-04b and CB-05b).
    expect(unproven).toEqual([]);
  });

  it('DI-04 every mutation switch is named in the table, in a row whose controls exist', async () => {
    // Issue 55: a switch nobody documents is a guard whose control nobody reads.
    const rows = await invariantsTable();
    const titles = await testTitles();
    const missing: string[] = [];
    for (const name of [...MUTATIONS, 'reconcile.rule.']) {
      const row = rows.find((r) => r.includes(`\`${name}`));
      const controls = [...(row ?? '').matchAll(/control[^|]*?\(?([A-Z][A-Z0-9]*-[A-Z0-9]+)/g)].map((m) => m[1] ?? '');
      if (!row || controls.length === 0 || !controls.every((id) => titled(titles, id))) missing.push(name);
    }
    expect(MUTATIONS.length).toBeGreaterThanOrEqual(9); // 9 on 2026-12-08; the registry only grows
    expect(missing).toEqual([]);
  });
});

/**
 * Claims of a negative result the table makes about a test: "fails without / when / if", "fails with
 * … off / removed", "fail on the code before", "times out without", "… without the index / change",
 * "before the fix". Dated by the commit that recorded them where no control runs (issue 55).
 */
const CLAIM =
  /\bfails? (?:without|when|if|on the code before)|\bfails? with [^|;)]*(?:off|removed)|times out without|\bwithout the (?:index|change)\b|before the fix/i;


function titled(titles: string, id: string): boolean {
  return new RegExp(`(^|[^A-Za-z0-9-])${id.replace(/-/g, '\\-')}([^0-9a-z]|$)`, 'm').test(titles);
}
