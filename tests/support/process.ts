import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './poll.ts';

export const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/flashpay.js');

export interface StartedProcess {
  child: ChildProcess;
  api: string;
  channel: string;
  stderr(): string;
}

/** Spawns `flashpay start --port 0` as its own process group and waits for its URL line. */
export async function spawnStart(
  cwd: string,
  env: NodeJS.ProcessEnv,
  extraArgs: string[] = [],
): Promise<StartedProcess> {
  const child = spawn(process.execPath, [BIN, 'start', '--port', '0', ...extraArgs], {
    cwd,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const urls = await new Promise<{ api: string; channel: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`flashpay start did not come up:\n${stderr}`)), 90_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // `--port 0` prints one JSON line; a fixed port prints the two human lines.
      const line = stdout.split('\n').find((l) => l.startsWith('{"api"'));
      const human = /flashpay API\s+(\S+)[^\n]*\nflashpay channel\s+(\S+)/.exec(stdout);
      if (line || human) {
        clearTimeout(timer);
        resolve(
          line
            ? (JSON.parse(line) as { api: string; channel: string })
            : { api: human?.[1] ?? '', channel: human?.[2] ?? '' },
        );
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`flashpay start exited with ${code}:\n${stderr}`));
    });
  });
  return { child, ...urls, stderr: () => stderr };
}

export function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** `flashpay inventory --port 0` as its own process; resolves with its URL line. */
export async function spawnInventory(
  env: NodeJS.ProcessEnv,
  databaseUrl: string,
): Promise<{ child: ChildProcess; url: string; stdout(): string }> {
  const child = spawn(process.execPath, [BIN, 'inventory', '--port', '0', '--database-url', databaseUrl], {
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"inventory"'));
      if (line) resolve((JSON.parse(line) as { inventory: string }).inventory);
    });
    child.once('exit', (code) => reject(new Error(`flashpay inventory exited with ${code}:\n${err}`)));
  });
  return { child, url, stdout: () => out };
}

/** kill -9 to a spawned process group (a `flashpay` command and its children), then waits for its exit. */
export async function kill9(child: ChildProcess): Promise<void> {
  if (child.pid) process.kill(-child.pid, 'SIGKILL');
  await waitForExit(child);
}

/** One JSON call to a spawned process's API, as a client makes it: bearer token, optional body and key. */
export async function callApi(base: string, method: string, route: string, auth: string, body?: unknown, key?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${auth}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers['idempotency-key'] = key;
  const response = await fetch(`${base}${route}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Polls a spawned shop's reconciliation until it is clean with nothing left to deliver; returns that report. */
export function waitForCleanReconciliation(api: string, operatorToken: string) {
  return waitFor(
    async () => {
      const r = await callApi(api, 'GET', '/v1/admin/reconciliation', operatorToken);
      return r.body.mismatches.length === 0 && r.body.events.pending === 0 ? r.body : undefined;
    },
    'a clean reconciliation',
    60_000,
    200,
  );
}
