import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';

// Issue 49: the README says how many tests `npm test` runs and how long it takes. A claim nobody
// checks drifts (it said "about 320 tests, 4–8 minutes" while the suite ran 649 in 11): this
// reporter compares a whole, passing run with it. A test count more than 25 % off the README's fails
// the run; the time is printed against the claim, and only warned about, since it depends on what
// else the machine does (a suite that fails because another process burns a core is a bug).

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const DRIFT = 0.25;

export interface SuiteClaim {
  tests: number;
  minMinutes: number;
  maxMinutes: number;
}

/** The README's "about N tests, A–B minutes". */
export function readmeClaim(readme: string): SuiteClaim | undefined {
  const m = /about ([\d,]+) tests, (\d+)[–-](\d+) minutes/.exec(readme);
  if (!m) return undefined;
  return { tests: Number(m[1]!.replaceAll(',', '')), minMinutes: Number(m[2]), maxMinutes: Number(m[3]) };
}

/** What is wrong with the claim, given a whole run's figures; empty when it holds. */
export function judgeClaim(claim: SuiteClaim, run: { tests: number; seconds: number }) {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (Math.abs(run.tests - claim.tests) > claim.tests * DRIFT)
    problems.push(`the README says about ${claim.tests} tests; this run had ${run.tests} (more than 25 % off)`);
  if (run.seconds > claim.maxMinutes * 60 * (1 + DRIFT))
    warnings.push(
      `the README says ${claim.minMinutes}–${claim.maxMinutes} minutes; this run took ${Math.round(run.seconds)} s`,
    );
  return { problems, warnings };
}

function testFiles(dir: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path.relative(ROOT, file) !== path.join('tests', 'cluster')) testFiles(file, found);
    } else if (entry.name.endsWith('.test.ts')) found.push(file);
  }
  return found;
}

export default class SuiteNumbers implements Reporter {
  private started = Date.now();

  onInit(): void {
    this.started = Date.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>, reason: TestRunEndReason): void {
    // Only a whole run that passed says anything about the whole suite.
    if (reason !== 'passed' || errors.length > 0 || modules.length !== testFiles(path.join(ROOT, 'tests')).length)
      return;
    const tests = modules.reduce((n, m) => n + [...m.children.allTests()].length, 0);
    const seconds = (Date.now() - this.started) / 1000;
    const claim = readmeClaim(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    const { problems, warnings } = claim
      ? judgeClaim(claim, { tests, seconds })
      : { problems: ['the README no longer says "about N tests, A–B minutes"'], warnings: [] };
    process.stderr.write(`suite: ${modules.length} files, ${tests} tests in ${Math.round(seconds)} s\n`);
    for (const w of warnings) process.stderr.write(`suite: warning: ${w}\n`);
    for (const p of problems) process.stderr.write(`suite: FAILED: ${p}; correct the README\n`);
    if (problems.length > 0) process.exitCode = 1;
  }
}
