import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { signPayload } from '../../src/platform/signature.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { spawnStart, waitForExit, type StartedProcess } from '../support/process.ts';
import { rawToken } from '../support/tokens.ts';

// One `flashpay start` process, as an attacker on loopback meets it: its own secrets (each 32+
// bytes, all different), a control token, a configured issuer and audience, a small rate limit,
// and the database the test reads to prove that a refusal changed nothing.
export const SECRETS = {
  jwt: 'security-suite-jwt-secret-0123456789abcdef',
  notify: 'security-suite-notify-secret-0123456789abcd',
  events: 'security-suite-events-secret-0123456789abcd',
  control: 'security-suite-control-token-0123456789abc',
  metrics: 'security-suite-metrics-token-0123456789abc',
};
export const ISSUER = 'flashpay-security-suite';
export const AUDIENCE = 'flashpay-api';
export const RATE_LIMIT_PER_MINUTE = 120;
// Room for the 250 ms provider latency of the in-flight case on a loaded machine.
export const PAY_TIMEOUT_MS = 2_000;

export interface Reply {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface Target {
  api: string;
  channel: string;
  db: TestDatabase;
  process: StartedProcess;
  token(tenant: string, user: string, scope?: 'buyer' | 'admin' | 'operator'): Promise<string>;
  call(
    method: string,
    url: string,
    options?: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> },
  ): Promise<Reply>;
  /** Counters an attack must not move: rows of every table that matters, SKU counters, the provider's ledger. */
  snapshot(): Promise<string>;
  stop(): Promise<void>;
}

export function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, FLASHPAY_LOG_LEVEL: 'error' };
  delete env.NODE_ENV; // vitest sets it; production is what a case asks for, not an accident
  return { ...env, ...extra };
}

export async function launchTarget(): Promise<Target> {
  const db = await freshDatabase({ poolSize: 2 });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-security-'));
  await chmod(dir, 0o755);
  const env = baseEnv({
    DATABASE_URL: db.url,
    FLASHPAY_JWT_SECRET: SECRETS.jwt,
    FLASHPAY_NOTIFY_SECRET: SECRETS.notify,
    FLASHPAY_EVENTS_SECRET: SECRETS.events,
    FLASHPAY_CONTROL_TOKEN: SECRETS.control,
    FLASHPAY_METRICS_TOKEN: SECRETS.metrics,
    FLASHPAY_JWT_ISSUER: ISSUER,
    FLASHPAY_JWT_AUDIENCE: AUDIENCE,
    FLASHPAY_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE),
    // These suites send many refused tokens from one address on purpose (failed-auth.test.ts has the limit).
    FLASHPAY_FAILED_AUTH_PER_MINUTE: '0',
    FLASHPAY_PAY_TIMEOUT_MS: String(PAY_TIMEOUT_MS),
  });
  const started = await spawnStart(dir, env, ['--no-workers', '--control']);
  const call: Target['call'] = async (method, url, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization ??= `Bearer ${options.token}`;
    let body = options.raw;
    if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(url.startsWith('http') ? url : `${started.api}${url}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };
  return {
    api: started.api,
    channel: started.channel,
    db,
    process: started,
    token: (tenant, user, scope = 'buyer') =>
      rawToken({ sub: user, tid: tenant, scope, iss: ISSUER, aud: AUDIENCE }, { secret: SECRETS.jwt }),
    call,
    async snapshot() {
      const tables = [
        'orders',
        'reservations',
        'idempotency_keys',
        'order_transitions',
        'outbox',
        'payment_notifications',
        'fulfillment',
        'ful_received',
      ];
      const counts: Record<string, unknown> = {};
      for (const table of tables)
        counts[table] = (await db.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n;
      counts.statuses = (await db.pool.query(`SELECT order_id, status, version FROM orders ORDER BY order_id`)).rows;
      counts.skus = (
        await db.pool.query(`SELECT tenant_id, sku, available, held, confirmed FROM sku_counters ORDER BY 1, 2`)
      ).rows;
      counts.outbox = (
        await db.pool.query(
          `SELECT event_id::text, published_at IS NULL AS pending, dead_at IS NULL AS alive FROM outbox ORDER BY event_id`,
        )
      ).rows;
      const statement = await call('GET', `${started.channel}/statement`);
      counts.ledger = statement.body;
      return JSON.stringify(counts);
    },
    async stop() {
      if (started.child.pid && started.child.exitCode === null) {
        process.kill(-started.child.pid, 'SIGTERM');
        await waitForExit(started.child);
      }
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A refusal as the contract describes it: the status, problem+json, the stable code. */
export function expectProblem(reply: Reply, status: number, code: string): void {
  expect({ status: reply.status, code: reply.body?.code }).toEqual({ status, code });
  expect(reply.headers.get('content-type')).toContain('application/problem+json');
  expect(reply.body).toMatchObject({
    status,
    code,
    type: expect.any(String),
    title: expect.any(String),
    detail: expect.any(String),
  });
}

/** A signed notification, exactly as the provider would send it. */
export function signedNotification(target: Target, body: Record<string, unknown>, secret = SECRETS.notify) {
  const raw = JSON.stringify(body);
  return target.call('POST', '/v1/payment-notifications', {
    raw,
    headers: { 'flashpay-signature': signPayload(secret, raw) },
  });
}

/** Bytes on a socket, for what fetch refuses to send (control characters in a header). */
export function rawRequest(
  api: string,
  request: string,
): Promise<{ status: number; contentType: string; body: string }> {
  const { hostname, port } = new URL(api);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(request));
    let data = '';
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n');
      resolve({
        status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0),
        contentType: /content-type: ([^\r\n]+)/i.exec(head)?.[1] ?? '',
        body,
      });
    });
  });
}
