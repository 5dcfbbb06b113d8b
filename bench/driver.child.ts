import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { perSecond, summarize } from './stats.ts';
import type { ChainedRun, DriverMessage, DriverReply, DriverRequest, DriverRun, DriverSpec } from './driver.ts';

// The driver process (see driver.ts). Every buyer is a loop that sends its next request as soon as
// the previous answer is read; latency is measured from write to the last byte of the answer.

const agents = new Map<string, http.Agent>();
// Only the start of an answer is kept for its problem `code`; a flashpay problem body is small.
const MAX_KEPT_BODY_CHARS = 512;
const CODE_PATTERN = /"code"\s*:\s*"([A-Z_]+)"/;
const ORDER_ID_PATTERN = /"order_id"\s*:\s*"([^"]+)"/;
const STATUS_PATTERN = /"status"\s*:\s*"([A-Z_]+)"/;

function agentFor(origin: string, concurrency: number): http.Agent {
  const key = `${origin} ${concurrency}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
    agents.set(key, agent);
  }
  return agent;
}

function send(
  agent: http.Agent,
  origin: URL,
  request: DriverRequest,
): Promise<{ status: number; body: string; replayed: string | undefined }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
    const outgoing = http.request(
      { agent, hostname: origin.hostname, port: origin.port, method: request.method, path: request.path, headers },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (body.length < MAX_KEPT_BODY_CHARS) body += chunk;
        });
        const replayed = response.headers['idempotent-replayed'];
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body,
            replayed: typeof replayed === 'string' ? replayed : undefined,
          }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

function increment(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** A request's `then`, sent for the order its answer named; recorded in `chained` at `index`. */
async function sendThen(
  agent: http.Agent,
  origin: URL,
  next: DriverRequest,
  firstBody: string,
  chained: ChainedRun,
  index: number,
): Promise<void> {
  const orderId = ORDER_ID_PATTERN.exec(firstBody)?.[1];
  if (!orderId) return increment(chained.statuses, 'no order_id');
  const startedAt = performance.now();
  try {
    const answer = await send(agent, origin, { ...next, path: next.path.replace('{order_id}', orderId) });
    chained.latenciesMs[index] = performance.now() - startedAt;
    increment(chained.statuses, String(answer.status));
    increment(chained.outcomes, STATUS_PATTERN.exec(answer.body)?.[1] ?? CODE_PATTERN.exec(answer.body)?.[1] ?? 'none');
  } catch {
    chained.latenciesMs[index] = performance.now() - startedAt;
    increment(chained.statuses, 'error');
  }
}

async function run(spec: DriverSpec): Promise<DriverRun> {
  const agent = agentFor(spec.origin, spec.concurrency);
  const origin = new URL(spec.origin);
  const latencies: number[] = new Array<number>(spec.requests.length).fill(0);
  const statuses: Record<string, number> = {};
  const codes: Record<string, number> = {};
  const replayed: Record<string, number> = {};
  let firstError: string | undefined;
  const chained: ChainedRun | undefined = spec.requests.some((r) => r.then)
    ? { latenciesMs: new Array<number>(spec.requests.length).fill(0), statuses: {}, outcomes: {} }
    : undefined;
  let next = 0;
  async function buyer(): Promise<void> {
    for (let index = next++; index < spec.requests.length; index = next++) {
      const request = spec.requests[index];
      if (!request) return;
      const startedAt = performance.now();
      try {
        const answer = await send(agent, origin, request);
        latencies[index] = performance.now() - startedAt;
        increment(statuses, String(answer.status));
        if (answer.replayed !== undefined) increment(replayed, answer.replayed);
        if (answer.status >= 300) increment(codes, CODE_PATTERN.exec(answer.body)?.[1] ?? 'none');
        if (request.then && chained && answer.status < 300)
          await sendThen(agent, origin, request.then, answer.body, chained, index);
      } catch (error) {
        latencies[index] = performance.now() - startedAt;
        increment(statuses, 'error');
        firstError ??= (error as Error).message;
      }
    }
  }
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: Math.min(spec.concurrency, spec.requests.length) }, () => buyer()));
  const elapsedMs = performance.now() - startedAt;
  const count = spec.requests.length;
  return {
    count,
    elapsedMs,
    perSecond: perSecond(count, elapsedMs),
    ...summarize(latencies),
    statuses,
    codes,
    replayed,
    latenciesMs: latencies,
    ...(chained ? { chained } : {}),
    ...(firstError ? { firstError } : {}),
  };
}

function reply(message: DriverReply): void {
  process.send?.(message);
}

process.on('message', (message: DriverMessage) => {
  if (message.kind === 'exit') {
    for (const agent of agents.values()) agent.destroy();
    process.disconnect();
    return;
  }
  run(message.spec).then(
    (result) => reply({ kind: 'result', id: message.id, result }),
    (error: unknown) => reply({ kind: 'failed', id: message.id, error: (error as Error).stack ?? String(error) }),
  );
});
// The parent went away (crash, Ctrl-C): nothing left to drive.
process.on('disconnect', () => process.exit(0));
