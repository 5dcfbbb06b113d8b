import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { promisify } from 'node:util';

// Debian's prometheus package (promtool and prometheus in /usr/bin). Missing: the tests that need
// it skip, unless FLASHPAY_REQUIRE_PROMETHEUS=1 (CI installs it), where they fail.

export const PROMTOOL = '/usr/bin/promtool';
export const PROMETHEUS = '/usr/bin/prometheus';
export const haveProm = existsSync(PROMTOOL) && existsSync(PROMETHEUS);
export const requireProm = process.env.FLASHPAY_REQUIRE_PROMETHEUS === '1';
/** Run when the binaries are there, or when they are required (and so fail without them). */
export const runProm = haveProm || requireProm;

export const run = promisify(execFile);

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const RULES = path.join(ROOT, 'deploy/prometheus/flashpay.rules.yml');

export interface Rule {
  alert: string;
  expr: string;
  annotations: { runbook: string; console: string };
}

/** The shipped alert rules, every group's. */
export async function alertRules(): Promise<Rule[]> {
  const doc = parse(await readFile(RULES, 'utf8')) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((group) => group.rules);
}
