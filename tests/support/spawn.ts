import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Child {
  process: ChildProcess;
  output(): string;
  /** Resolves with the first stdout line containing `marker`; rejects if the child exits first. */
  waitFor(marker: string, timeoutMs?: number): Promise<string>;
  /** SIGKILL (kill -9) and wait for the exit; resolves with the terminating signal. */
  kill9(): Promise<NodeJS.Signals | null>;
}

/** Runs a TypeScript fixture in its own Node process (through tsx), like the seed's separate JVM. */
/** The one spawner of test processes. */
export function spawnFixture(script: string, env: Record<string, string>, args: string[] = []): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'tests/fixtures', script), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  return {
    process: child,
    output: () => `${stdout}\n${stderr}`,
    waitFor(marker, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no "${marker}" within ${timeoutMs}ms:\n${stdout}\n${stderr}`)),
          timeoutMs,
        );
        const check = () => {
          const line = stdout.split('\n').find((l) => l.includes(marker));
          if (line !== undefined) {
            clearTimeout(timer);
            child.stdout.off('data', check);
            resolve(line);
          }
        };
        child.stdout.on('data', check);
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`child exited before "${marker}":\n${stdout}\n${stderr}`));
        });
        check();
      });
    },
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}
