import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { tokenSigner, type TokenSigner } from '../../src/platform/auth.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { spawnStart, waitForExit, type StartedProcess } from '../support/process.ts';
import { eventually } from '../support/payments.ts';

export const FAULT_JWT = 'fault-suite-jwt-secret-of-at-least-32-bytes';
export const FAULT_TENANT = 'acme';

/** `flashpay start` as its own process over a fresh database, with an admin client for it. */
export interface FaultStack {
  proc: StartedProcess;
  db: TestDatabase;
  /** The process's working directory (its .flashpay data). */
  dir: string;
  signer: TokenSigner;
  admin: string;
  adminCall(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  alive(): boolean;
  stop(): Promise<number | null>;
  close(): Promise<void>;
}

/** `db` defaults to a fresh database on the suite's server; a test that restarts its own server passes one there. */
export async function startFaultStack(
  options: { env?: NodeJS.ProcessEnv; args?: string[]; db?: TestDatabase } = {},
): Promise<FaultStack> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-fault-'));
  const db = options.db ?? (await freshDatabase({ poolSize: 4 }));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FLASHPAY_JWT_SECRET: FAULT_JWT,
    FLASHPAY_LOG_LEVEL: 'warn',
    DATABASE_URL: db.url,
    ...options.env,
  };
  const proc = await spawnStart(dir, env, ['--control', ...(options.args ?? [])]);
  const signer = tokenSigner(FAULT_JWT);
  const admin = await signer.sign({ tenantId: FAULT_TENANT, userId: 'ops', scope: 'admin' });
  const stack: FaultStack = {
    proc,
    db,
    dir,
    signer,
    admin,
    async adminCall(method, url, body) {
      const response = await fetch(`${proc.api}${url}`, {
        method,
        headers: { authorization: `Bearer ${admin}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    alive: () => proc.child.exitCode === null && proc.child.signalCode === null,
    async stop() {
      if (!stack.alive()) return proc.child.exitCode;
      proc.child.kill('SIGTERM');
      return waitForExit(proc.child);
    },
    async close() {
      if (stack.alive() && proc.child.pid) process.kill(-proc.child.pid, 'SIGKILL');
      await waitForExit(proc.child);
      await db.drop();
      if (!options.db) await adminSql((c) => c.query(`DROP DATABASE IF EXISTS ${db.name}_channel WITH (FORCE)`));
      await rm(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

export async function adminSql<T>(fn: (client: pg.Client) => Promise<T>, url = inject('serverUrl')): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** What a PostgreSQL restart, a failover or an idle-session killer does to every connection. */
export async function terminateBackends(databases: string[], url?: string): Promise<number> {
  return adminSql(async (client) => {
    const result = await client.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ANY($1) AND pid <> pg_backend_pid()`,
      [databases],
    );
    return result.rowCount ?? 0;
  }, url);
}

/** Recovery, outbox drain and reconciliation until it is clean (the system converges on its own). */
export async function convergeClean(stack: FaultStack, timeoutMs = 60_000) {
  return eventually(
    async () => {
      // At least the route's floor (pay timeout 300 ms + 1 s): 1,000 was refused with 400, so only
      // the background loop recovered, after its own stale age and any backoff.
      await stack.adminCall('POST', '/v1/admin/recovery/run', { stale_after_ms: 2_000 });
      await stack.adminCall('POST', '/v1/admin/outbox/drain');
      return (await stack.adminCall('GET', '/v1/admin/reconciliation')).body as {
        ok: boolean;
        pending: number;
        mismatches: unknown[];
      };
    },
    (report) => report?.ok === true && report.pending === 0,
    timeoutMs,
  );
}

/** Every order a client was told about is in the database as it was told. */
export async function answeredMatchDatabase(
  db: TestDatabase,
  created: Map<string, string>,
  paid: Map<string, string>,
): Promise<string[]> {
  const rows = await db.pool.query<{ order_id: string; status: string }>(
    'SELECT order_id, status FROM orders WHERE order_id = ANY($1)',
    [[...created.keys()]],
  );
  const status = new Map(rows.rows.map((r) => [r.order_id, r.status]));
  const wrong: string[] = [];
  for (const id of created.keys()) if (!status.has(id)) wrong.push(`${id}: answered 201, not in the database`);
  for (const [id, told] of paid) {
    const now = status.get(id);
    // UNKNOWN converges to anything; a known answer must stand (PAID may only move on by a refund).
    if (told !== 'UNKNOWN' && told !== now) wrong.push(`${id}: answered ${told}, database says ${now}`);
  }
  return wrong;
}

/** `flashpay sim` (a small seeded sale with every fault) driven against the stack: exit 0 only when it reconciles clean. */
export async function simConverges(stack: FaultStack, seed: number): Promise<{ code: number | null; output: string }> {
  const { spawn } = await import('node:child_process');
  const { BIN } = await import('../support/process.ts');
  const child = spawn(
    process.execPath,
    [
      BIN,
      'sim',
      '--seed',
      String(seed),
      '--orders',
      '12',
      '--stock',
      '10',
      '--late',
      '4',
      '--mix',
      'decline=2,lost=3,linger=2,nopay=1,expire=0',
      '--refund-timeouts',
      '0',
      '--api',
      stack.proc.api,
      '--channel',
      stack.proc.channel,
    ],
    {
      env: { ...process.env, FLASHPAY_JWT_SECRET: FAULT_JWT },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}
