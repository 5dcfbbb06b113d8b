import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { startChannel } from '../src/channel/index.ts';
import { ROOT } from '../src/platform/root.ts';

// The provider recovery (P6) and the end-to-end run (P3) ask: the fake channel (`flashpay channel
// --control`, memory ledger) in a process of its own, as a provider is, or in this process for
// the smoke test (no process start).
// Every query and close answers after a fixed latency: a provider is tens of ms away, not a
// loopback call, and recovery's job is to keep that latency busy, not to out-run a local stub.

// From the checkout's root: this file also runs compiled, from build/dist/bench (bin/dist.js).
const BIN = path.join(ROOT, 'bin', 'flashpay.js');
const START_TIMEOUT_MS = 30_000;
// A fault rule hits this many requests at most (the channel's limit): enough for any run.
const EVERY_REQUEST = 1_000_000;

export interface Provider {
  url: string;
  /** The secret it signs its notifications with (the service under test must be given it). */
  secret: string;
  /** POST/GET on the control API. */
  control(method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown>;
  /** Its process; undefined when it runs in this one. */
  pid: number | undefined;
  close(): Promise<void>;
}

async function controlCall(url: string, method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`provider ${method} ${route}: HTTP ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function childChannel(secret: string): Promise<{ url: string; pid: number | undefined; close(): Promise<void> }> {
  const child = spawn(process.execPath, [BIN, 'channel', '--port', '0', '--control'], {
    env: { ...process.env, FLASHPAY_NOTIFY_SECRET: secret, FLASHPAY_CONTROL_TOKEN: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the channel process did not start')), START_TIMEOUT_MS);
    child.once('exit', (code) => reject(new Error(`the channel process exited (${code})`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const parsed = /^\{"channel":"([^"]+)"\}$/.exec(line.trim());
      if (parsed?.[1]) {
        clearTimeout(timer);
        resolve(parsed[1]);
      }
    });
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    url,
    pid: child.pid,
    async close() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface ProviderOptions {
  /** HOLD (recovery alone converges, P6) or DELIVER (the provider notifies as it answers, P3). */
  callbacks?: 'HOLD' | 'DELIVER';
}

/**
 * The channel with `latencyMs` on every query and close, callbacks held unless asked to deliver.
 * In a process of its own, the service's load does not slow the provider down (a real provider
 * is another service); in-process for the smoke tests (no process start, memory ledger).
 */
export async function startProvider(
  where: 'process' | 'in-process',
  latencyMs: number,
  options: ProviderOptions = {},
): Promise<Provider> {
  const secret = randomBytes(32).toString('hex');
  const channel =
    where === 'process' ? await childChannel(secret) : await startChannel({ notifySecret: secret, control: true });
  const control = (method: 'GET' | 'POST', route: string, body?: unknown) =>
    controlCall(channel.url, method, route, body);
  try {
    if ((options.callbacks ?? 'HOLD') === 'HOLD') await control('POST', '/_control/callbacks', { mode: 'HOLD' });
    if (latencyMs > 0)
      for (const op of ['query', 'close'])
        await control('POST', '/_control/faults', { op, kind: 'DELAY_RESPONSE', ms: latencyMs, times: EVERY_REQUEST });
  } catch (error) {
    await channel.close();
    throw error;
  }
  const pid = 'pid' in channel ? channel.pid : undefined;
  return { url: channel.url, secret, control, pid, close: () => channel.close() };
}
