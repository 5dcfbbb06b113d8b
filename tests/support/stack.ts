import type { FastifyInstance } from 'fastify';
import { buildApp, type RouteModule } from '../../src/app.ts';
import type { AppDeps } from '../../src/app.deps.ts';
import { tokenSigner, type Scope } from '../../src/platform/auth.ts';
import { ManualClock, type Clock } from '../../src/platform/clock.ts';
import { loadConfig, type Config } from '../../src/platform/config.ts';
import { createHttpSink } from '../../src/outbox/sinks/index.ts';
import { createRelay } from '../../src/outbox/relay.ts';
import { freshDatabase, type TestDatabase } from './db.ts';

export const TEST_JWT_SECRET = 'test-only-jwt-secret-at-least-32-bytes-long';
export const TEST_NOTIFY_SECRET = 'test-only-notify-secret-at-least-32-bytes';
export const TEST_EVENTS_SECRET = 'test-only-events-secret-at-least-32-bytes';

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface Stack {
  url: string;
  db: TestDatabase;
  deps: AppDeps;
  app: FastifyInstance;
  clock: ManualClock;
  token(tenantId: string, userId: string, scope?: Scope): Promise<string>;
  call(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<HttpResult>;
  close(): Promise<void>;
}

export interface StackOptions {
  db?: TestDatabase;
  clock?: Clock;
  config?: Partial<Config>;
  channelUrl?: string;
  routes?: RouteModule[];
}

/** The order API on a real port over a real database: what a client sees, nothing mocked. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const db = options.db ?? (await freshDatabase());
  const clock = (options.clock as ManualClock | undefined) ?? new ManualClock();
  const config = { ...loadConfig({}), logLevel: 'silent', ...options.config };
  const signer = tokenSigner(TEST_JWT_SECRET);
  const deps: AppDeps = {
    db: db.pool,
    clock,
    config,
    signer,
    notifySecret: TEST_NOTIFY_SECRET,
    eventsSecret: TEST_EVENTS_SECRET,
    channelUrl: options.channelUrl ?? 'http://127.0.0.1:1',
    notifyUrl: '',
  };
  const app = await buildApp(deps, options.routes);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  deps.notifyUrl = `${url}/v1/payment-notifications`;
  // Events go to the built-in consumer's webhook, as in `flashpay start`; tests drain on demand.
  const sink = createHttpSink({ url: `${url}/v1/fulfillment/events`, secret: TEST_EVENTS_SECRET, timeoutMs: 2_000 });
  deps.relay = createRelay({
    db: db.pool,
    sink,
    clock,
    leaseMs: 5_000,
    batchSize: 50,
    maxAttempts: 5,
    backoffBaseMs: 20,
  });
  return {
    url,
    db,
    deps,
    app,
    clock,
    token: (tenantId, userId, scope = 'buyer') => signer.sign({ tenantId, userId, scope }),
    async call(method, path, callOptions = {}) {
      const headers: Record<string, string> = { ...callOptions.headers };
      if (callOptions.token) headers.authorization = `Bearer ${callOptions.token}`;
      let body: string | undefined = callOptions.rawBody;
      if (callOptions.body !== undefined) body = JSON.stringify(callOptions.body);
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      const response = await fetch(`${url}${path}`, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, text, body: parsed };
    },
    async close() {
      await deps.relay?.stop();
      await sink.close();
      await app.close();
      if (!options.db) await db.drop();
    },
  };
}

export async function countRows(
  db: TestDatabase,
  table: string,
  where = 'true',
  params: unknown[] = [],
): Promise<number> {
  const result = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params);
  return result.rows[0]?.n ?? 0;
}
