import type { TokenSigner } from '../../src/platform/auth.ts';

// A steady load of creates and pays against a running `flashpay start`, as a client with a
// deadline would send it: every request is bounded, a 503 is retried with the same key, and the
// answers are kept so the test can hold them against the database afterwards. A request never
// answered (hung, or its connection failed) is a violation; a 503 is an answer.

export interface LoadOptions {
  api: string;
  signer: TokenSigner;
  tenant: string;
  sku: string;
  workers: number;
  /** A request not answered within this is a hang: recorded as a violation. */
  deadlineMs: number;
  /** Tries of one keyed request while the answer is 503. */
  maxTries?: number;
}

export interface LoadReport {
  /** order id → the status the client was last told. */
  created: Map<string, string>;
  paid: Map<string, string>;
  answers: number;
  unavailable: number;
  unknownOutcome: number;
  violations: string[];
}

interface Reply {
  status: number;
  body: Record<string, unknown>;
  replayed: string | null;
  retryAfter: string | null;
}

async function send(
  options: LoadOptions,
  path: string,
  token: string,
  key: string,
  body?: unknown,
): Promise<Reply | 'HUNG' | 'NO_ANSWER'> {
  try {
    const response = await fetch(`${options.api}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'idempotency-key': key,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(options.deadlineMs),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      replayed: response.headers.get('idempotent-replayed'),
      retryAfter: response.headers.get('retry-after'),
    };
  } catch (error) {
    return (error as Error).name === 'TimeoutError' ? 'HUNG' : 'NO_ANSWER';
  }
}

/** One keyed request, retried with the same key while it is answered 503; checks each 503 tells the truth. */
async function keyed(
  options: LoadOptions,
  report: LoadReport,
  path: string,
  token: string,
  key: string,
  body?: unknown,
): Promise<Reply | undefined> {
  let nothingExecuted = false;
  for (let attempt = 0; attempt < (options.maxTries ?? 60); attempt++) {
    const reply = await send(options, path, token, key, body);
    if (reply === 'HUNG') {
      report.violations.push(`${path} ${key}: no answer within ${options.deadlineMs} ms`);
      return undefined;
    }
    // Every request the load sends is answered: the process under test stays up through the fault
    // (a database restart or a killed connection), so a refused or cut connection is a failure, not
    // a request to forget (issue 55: they were dropped uncounted).
    if (reply === 'NO_ANSWER') {
      report.violations.push(`${path} ${key}: the connection failed with no answer`);
      return undefined;
    }
    report.answers++;
    if (reply.status === 503) {
      report.unavailable++;
      if (reply.retryAfter === null) report.violations.push(`${path} ${key}: 503 without Retry-After`);
      if (reply.body.outcome === 'unknown') report.unknownOutcome++;
      nothingExecuted = reply.body.outcome !== 'unknown';
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    if (reply.status >= 500) report.violations.push(`${path} ${key}: ${reply.status} ${JSON.stringify(reply.body)}`);
    // "Nothing was executed" was a promise: the retry must execute afresh, not replay.
    if (nothingExecuted && reply.replayed === 'true')
      report.violations.push(`${path} ${key}: 503 said nothing executed, the retry replayed ${reply.status}`);
    return reply;
  }
  return undefined; // answered 503 on every try: an answer (counted in `unavailable`), not a loss
}

export function startLoad(options: LoadOptions): { stop(): Promise<LoadReport>; report: LoadReport } {
  const report: LoadReport = {
    created: new Map(),
    paid: new Map(),
    answers: 0,
    unavailable: 0,
    unknownOutcome: 0,
    violations: [],
  };
  let stopped = false;
  const worker = async (w: number) => {
    for (let i = 0; !stopped; i++) {
      const token = await options.signer.sign({ tenantId: options.tenant, userId: `load-${w}-${i}`, scope: 'buyer' });
      const created = await keyed(options, report, '/v1/orders', token, `c-${w}-${i}`, { sku: options.sku });
      if (created?.status !== 201) continue;
      const orderId = String(created.body.order_id);
      report.created.set(orderId, String(created.body.status));
      const paid = await keyed(options, report, `/v1/orders/${orderId}/pay`, token, `p-${w}-${i}`);
      if (paid?.status === 200) report.paid.set(orderId, String(paid.body.status));
    }
  };
  const running = Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w)));
  return {
    report,
    async stop() {
      stopped = true;
      await running;
      return report;
    },
  };
}

/** Resolves once `n` more answers arrived (progress of the load, never a bare sleep). */
export async function answersGrow(
  report: LoadReport,
  n: number,
  alive: () => boolean,
  timeoutMs = 45_000,
  why: () => string = () => '',
): Promise<void> {
  const target = report.answers + n;
  const deadline = Date.now() + timeoutMs;
  while (report.answers < target) {
    if (!alive())
      throw new Error(`the process died under load after ${report.answers} answers:\n${why().slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`load made no progress: ${report.answers}/${target} answers`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
