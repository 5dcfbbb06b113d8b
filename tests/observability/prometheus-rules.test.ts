import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { alertRules, PROMTOOL, ROOT, RULES, run, runProm } from './prometheus.ts';

// The alert rules and the dashboard as shipped (deploy/): promtool accepts the rules, every alert
// fires on its bad series and stays quiet on its good one, and each has a runbook entry that
// links the console page answering it.

const RULE_TESTS = path.join(ROOT, 'deploy/prometheus/flashpay.rules.test.yml');

describe('alert rules (issue 53)', () => {
  it.runIf(runProm)('PR-01: promtool checks the rules and passes their unit tests', async () => {
    const checked = await run(PROMTOOL, ['check', 'rules', RULES]);
    expect(checked.stdout).toMatch(/SUCCESS: 10 rules found/);
    const tested = await run(PROMTOOL, ['test', 'rules', RULE_TESTS], { cwd: path.dirname(RULE_TESTS) });
    expect(tested.stdout).toMatch(/SUCCESS/);
  });

  it('PR-02: every alert has a firing and a quiet unit test, a runbook entry and a console link', async () => {
    const rules = await alertRules();
    expect(rules.length).toBe(10);
    const tests = parse(await readFile(RULE_TESTS, 'utf8')) as {
      tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test);
    const runbook = await readFile(path.join(ROOT, 'docs/runbook.md'), 'utf8');
    const html = await readFile(path.join(ROOT, 'web/ops.html'), 'utf8');
    for (const rule of rules) {
      const mine = cases.filter((c) => c.alertname === rule.alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${rule.alert} fires`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${rule.alert} stays quiet`,
      ).toBe(true);
      expect(rule.annotations.runbook).toBe(`docs/runbook.md#${rule.alert.toLowerCase()}`);
      const section = runbook.split(/^## /m).find((s) => s.startsWith(`${rule.alert}\n`));
      expect(section, `runbook entry for ${rule.alert}`).toBeDefined();
      // The console link is in the entry and names an element of the console page.
      expect(section).toContain(`(${rule.annotations.console})`);
      const anchor = rule.annotations.console.replace('/ops#', '');
      expect(html, `the console has #${anchor}`).toContain(`id="${anchor}"`);
    }
  });
});
