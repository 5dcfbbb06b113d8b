import { performance } from 'node:perf_hooks';
import type { Driver, DriverRequest } from './driver.ts';
import { perSecond, summarize, type LatencySummary } from './stats.ts';

// The cluster part's traffic through HAProxy: admin calls (fetch, retried while the cluster is
// between primaries), the timed create+pay runs (the bench's driver process), and the probe that
// times a failover (in this process: a few writers, one request in flight each).

export interface Tokens {
  admin: string;
  operator: string;
  buyers: string[];
}

const ADMIN_RETRY_MS = 200;
const ADMIN_GIVE_UP_MS = 120_000;
const RETRYABLE = new Set([502, 503, 504]);

/** One admin call, retried on 502/503/504 and dropped connections; the answer's status and JSON body. */
export async function adminCall(
  api: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  key?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const deadline = Date.now() + ADMIN_GIVE_UP_MS;
  for (;;) {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(key ? { 'idempotency-key': key } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    }).catch(() => undefined);
    if (response && !RETRYABLE.has(response.status))
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    await response?.arrayBuffer();
    if (Date.now() > deadline) throw new Error(`${method} ${path}: ${response?.status ?? 'no answer'}`);
    await new Promise((resolve) => setTimeout(resolve, ADMIN_RETRY_MS));
  }
}

export async function createSku(api: string, admin: string, sku: string, stock: number): Promise<void> {
  const body = { sku, name: sku, price: 1990, stock };
  const answer = await adminCall(api, admin, 'POST', '/v1/admin/skus', body, `sku-${sku}`);
  if (answer.status !== 201) throw new Error(`creating SKU ${sku}: ${answer.status} ${JSON.stringify(answer.body)}`);
}

/** The SKU's counters after a run: nothing oversold, the counters add up, every PAID answer confirmed. */
export async function checkSku(api: string, admin: string, sku: string, paid: number): Promise<string[]> {
  const { body } = await adminCall(api, admin, 'GET', `/v1/admin/skus/${sku}`);
  const [total, available, held, confirmed] = ['total', 'available', 'held', 'confirmed'].map((k) => Number(body[k]));
  const failures: string[] = [];
  if (!(confirmed! <= total!)) failures.push(`${sku} oversold: confirmed ${confirmed} > stock ${total}`);
  if (total !== available! + held! + confirmed!)
    failures.push(`${sku}: total ${total} ≠ available ${available} + held ${held} + confirmed ${confirmed}`);
  if (!(confirmed! >= paid)) failures.push(`${sku}: ${paid} answered PAID, ${confirmed} confirmed`);
  return failures;
}

export interface LoadRun {
  orders: number;
  paid: number;
  elapsedMs: number;
  paidPerSecond: number;
  /** Create plus pay, per order that was paid or not. */
  orderLatency: LatencySummary;
  /** Create statuses and problem codes, then `pay <outcome>` counts. */
  answers: Record<string, number>;
}

/** `orders` buyers' create-then-pay on `sku`, `concurrency` at a time, through the driver process. */
export async function runLoad(
  driver: Driver,
  api: string,
  tokens: Tokens,
  spec: { sku: string; orders: number; concurrency: number; keyPrefix: string },
): Promise<LoadRun> {
  const requests = Array.from({ length: spec.orders }, (_, i): DriverRequest => {
    const token = tokens.buyers[i % tokens.buyers.length]!;
    const key = `${spec.keyPrefix}-${i}`;
    return {
      method: 'POST',
      path: '/v1/orders',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': key },
      body: JSON.stringify({ sku: spec.sku }),
      then: {
        method: 'POST',
        path: '/v1/orders/{order_id}/pay',
        headers: { authorization: `Bearer ${token}`, 'idempotency-key': `${key}/pay` },
      },
    };
  });
  const run = await driver.run({ origin: api, concurrency: spec.concurrency, requests });
  const paid = run.chained?.outcomes.PAID ?? 0;
  const answers: Record<string, number> = { ...run.statuses };
  for (const [code, n] of Object.entries(run.codes)) answers[code] = n;
  for (const [outcome, n] of Object.entries(run.chained?.outcomes ?? {})) answers[`pay ${outcome}`] = n;
  const orderMs = run.latenciesMs.map((ms, i) => ms + (run.chained?.latenciesMs[i] ?? 0));
  return {
    orders: spec.orders,
    paid,
    elapsedMs: run.elapsedMs,
    paidPerSecond: perSecond(paid, run.elapsedMs),
    orderLatency: summarize(orderMs),
    answers,
  };
}

const PROBE_WRITERS = 4;
// Each writer pauses this long after an answer: 4 writers probe about every 25 ms.
const PROBE_PAUSE_MS = 100;
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Writers creating orders through HAProxy until stopped. `firstAcceptedAfter(t)` resolves with the
 * time (performance.now) at which the first create sent at or after `t` was answered 201.
 */
export function startProbe(api: string, token: string, sku: string, keyPrefix: string) {
  let stopped = false;
  let sequence = 0;
  const accepted: { sentAt: number; answeredAt: number }[] = [];
  const waiters: { after: number; resolve: (at: number) => void }[] = [];
  const write = async () => {
    const sentAt = performance.now();
    const response = await fetch(`${api}/v1/orders`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': `${keyPrefix}-${++sequence}`,
      },
      body: JSON.stringify({ sku }),
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    }).catch(() => undefined);
    await response?.arrayBuffer().catch(() => undefined);
    if (response?.status !== 201) return;
    const answeredAt = performance.now();
    accepted.push({ sentAt, answeredAt });
    for (const waiter of waiters.filter((w) => sentAt >= w.after)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(answeredAt);
    }
  };
  const writers = Array.from({ length: PROBE_WRITERS }, async (_, i) => {
    await new Promise((resolve) => setTimeout(resolve, (i * PROBE_PAUSE_MS) / PROBE_WRITERS));
    while (!stopped) {
      await write();
      await new Promise((resolve) => setTimeout(resolve, PROBE_PAUSE_MS));
    }
  });
  return {
    firstAcceptedAfter(after: number): Promise<number> {
      const done = accepted.find((a) => a.sentAt >= after);
      if (done) return Promise.resolve(done.answeredAt);
      return new Promise((resolve) => waiters.push({ after, resolve }));
    },
    async stop(): Promise<void> {
      stopped = true;
      await Promise.all(writers);
    },
  };
}
