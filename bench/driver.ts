import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { perSecond, round, summarize } from './stats.ts';

/**
 * The HTTP load driver, shared by every flashpay run and its baseline so that both pay the same
 * client cost. It runs in its own process (its event loop never competes with the server's) and
 * uses node:http with one keep-alive `http.Agent` per origin, `maxSockets` = concurrency: each
 * simulated buyer owns one persistent connection. node:http costs less per request than the
 * global fetch (undici behind WHATWG streams); docs/benchmarks/journal.md has the comparison.
 */

export interface DriverRequest {
  method: 'POST' | 'GET';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /**
   * Sent by the same buyer right after a 2xx answer to this one, with `{order_id}` in its path
   * replaced by the answer's `order_id` (P3: create, then pay that order). Timed on its own.
   */
  then?: DriverRequest;
}

/** The `then` requests of a run: latency each (0 where none was sent), HTTP statuses and body `status`es. */
export interface ChainedRun {
  latenciesMs: number[];
  statuses: Record<string, number>;
  /** The answer body's `status` field (an order's state: PAID, UNKNOWN, FAILED…) → count. */
  outcomes: Record<string, number>;
}

export interface DriverSpec {
  /** http://127.0.0.1:<port> */
  origin: string;
  concurrency: number;
  requests: DriverRequest[];
}

export interface DriverResult {
  count: number;
  elapsedMs: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** HTTP status → count; "error" counts requests that got no response at all. */
  statuses: Record<string, number>;
  /** problem+json `code` of non-2xx answers → count. */
  codes: Record<string, number>;
  /** Idempotent-Replayed header value → count (absent on routes without keys). */
  replayed?: Record<string, number>;
  firstError?: string;
}

/** One run with every request's latency, so that several runs (rounds) can be merged. */
export interface DriverRun extends DriverResult {
  latenciesMs: number[];
  /** Only when some request had a `then`. */
  chained?: ChainedRun;
}

export type DriverMessage = { kind: 'run'; id: number; spec: DriverSpec } | { kind: 'exit' };
export type DriverReply =
  { kind: 'result'; id: number; result: DriverRun } | { kind: 'failed'; id: number; error: string };

export interface Driver {
  /** The driver process (its CPU is read from /proc by the runs that report CPU per order). */
  pid: number | undefined;
  run(spec: DriverSpec): Promise<DriverRun>;
  close(): Promise<void>;
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [key, n] of Object.entries(from)) into[key] = (into[key] ?? 0) + n;
}

/** Rounds of one target as one figure: requests over summed time, percentiles over all requests. */
export function mergeRuns(runs: readonly DriverRun[]): DriverResult {
  const count = runs.reduce((sum, run) => sum + run.count, 0);
  const elapsedMs = runs.reduce((sum, run) => sum + run.elapsedMs, 0);
  const statuses: Record<string, number> = {};
  const codes: Record<string, number> = {};
  const replayed: Record<string, number> = {};
  for (const run of runs) {
    addCounts(statuses, run.statuses);
    addCounts(codes, run.codes);
    addCounts(replayed, run.replayed ?? {});
  }
  const firstError = runs.find((run) => run.firstError)?.firstError;
  const latency = summarize(runs.flatMap((run) => run.latenciesMs));
  return {
    count,
    elapsedMs: round(elapsedMs, 1),
    perSecond: perSecond(count, elapsedMs),
    ...latency,
    statuses,
    codes,
    replayed,
    ...(firstError ? { firstError } : {}),
  };
}

// driver.child.ts, or driver.child.js in the compiled copy (bin/dist.js): this file's own extension.
const HERE = fileURLToPath(import.meta.url);
const CHILD = path.join(path.dirname(HERE), `driver.child${path.extname(HERE)}`);

function tsxLoader(): string {
  // Absolute, so the child starts the same whatever the current directory.
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Forks the driver process; runs are sequential (one at a time). */
export async function startDriver(): Promise<Driver> {
  const child = fork(CHILD, [], {
    execArgv: ['--import', tsxLoader()],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  let nextId = 0;
  const pending = new Map<number, { resolve: (result: DriverRun) => void; reject: (error: Error) => void }>();
  child.on('message', (reply: DriverReply) => {
    const waiter = pending.get(reply.id);
    pending.delete(reply.id);
    if (reply.kind === 'result') waiter?.resolve(reply.result);
    else waiter?.reject(new Error(`driver: ${reply.error}`));
  });
  child.once('exit', (code, signal) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`driver process exited (${code ?? signal})`));
    pending.clear();
  });
  return {
    pid: child.pid,
    run(spec) {
      const id = ++nextId;
      return new Promise<DriverRun>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ kind: 'run', id, spec } satisfies DriverMessage);
      });
    },
    async close() {
      if (child.connected) child.send({ kind: 'exit' } satisfies DriverMessage);
      await exited(child);
    },
  };
}
