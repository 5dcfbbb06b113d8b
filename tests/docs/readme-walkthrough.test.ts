import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveStack, type LiveStack } from '../cli/live-stack.ts';

// README's "Try it" is a program: its shell blocks run in order, as written, against a fresh
// `flashpay start`, and every line ending in `# → X` must print exactly X.
const root = path.resolve(import.meta.dirname, '../..');
const EXPECT = /\s+# → (.*)$/;

/** The ```sh blocks of one README section, as logical lines (backslash continuations joined). */
export function shellOfSection(readme: string, heading: string): string[] {
  const start = readme.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no section "${heading}"`);
  const end = readme.indexOf('\n## ', start + 4);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  return blocks.flatMap((block) => block.replace(/\\\n\s*/g, '').split('\n')).filter((l) => l.trim() !== '');
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The lines as a bash script that checks each promise and counts the checks. */
export function checkedScript(lines: string[]): { script: string; checks: number } {
  let checks = 0;
  const body = lines.map((line) => {
    const promise = EXPECT.exec(line);
    if (!promise) return line;
    checks += 1;
    const command = line.slice(0, promise.index);
    const expected = promise[1] ?? '';
    return [
      `__out=$(${command})`,
      `if [ "$__out" != ${quote(expected)} ]; then printf 'RW-01 broken promise: %s\\n  expected: %s\\n  got: %s\\n' ${quote(command)} ${quote(expected)} "$__out" >&2; exit 1; fi`,
      `echo "RW-CHECK ${checks}"`,
    ].join('\n');
  });
  return { script: ['set -euo pipefail', ...body].join('\n'), checks };
}

describe('README walkthrough (RW)', () => {
  let stack: LiveStack;
  beforeAll(async () => {
    stack = await startLiveStack({ prefix: 'flashpay-rw-' });
  });
  afterAll(async () => stack?.stop());

  it('RW-01: the "Try it" shell blocks run in order on a fresh stack and print every promised outcome', async () => {
    const readme = await readFile(path.join(root, 'README.md'), 'utf8');
    const { script, checks } = checkedScript(shellOfSection(readme, 'Try it'));
    expect(checks).toBeGreaterThanOrEqual(15);
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn('bash', ['-c', script], { cwd: root, env: { ...stack.env, API: stack.api } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.match(/^RW-CHECK \d+$/gm)).toHaveLength(checks);
    // The business outcome, from the database: three tees sold to three buyers, two of them paid.
    const orders = await stack.database.pool.query<{ user_id: string; status: string }>(
      "SELECT user_id, status FROM orders WHERE tenant_id = 'acme' ORDER BY user_id",
    );
    expect(orders.rows).toEqual([
      { user_id: 'alice', status: 'PAID' },
      { user_id: 'bob', status: 'PAID' },
      { user_id: 'carol', status: 'CREATED' },
    ]);
  }, 240_000);

  it('RW-02: a line that does not print its promise fails the walkthrough (the check can fail)', async () => {
    const { script, checks } = checkedScript(['echo one  # → one', 'echo two  # → three', 'echo never  # → never']);
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('bash', ['-c', script]);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(checks).toBe(3);
    expect(result).toEqual({
      code: 1,
      stdout: 'RW-CHECK 1\n',
      stderr: expect.stringContaining('expected: three\n  got: two'),
    });
  });
});
