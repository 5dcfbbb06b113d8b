import type { ChildProcess } from 'node:child_process';
import { spawnFixture } from './spawn.ts';

/** Runs a fixture script in its own Node process and resolves once it prints `line`. */
export async function runUntil(
  script: string,
  args: string[],
  line: string,
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  const child = spawnFixture(script, env, args);
  await child.waitFor(line, 30_000);
  return child.process;
}

export async function killHard(child: ChildProcess): Promise<string | null> {
  const exited = new Promise<string | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  child.kill('SIGKILL');
  return exited;
}
