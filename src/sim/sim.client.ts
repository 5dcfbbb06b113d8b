// The simulation talks to a stack only over HTTP, as a buyer, an operator and a test harness
// would. A stack being killed and restarted under it is expected: connection errors are retried
// until a deadline; answers are returned as they came.
import { createFlashpayClient, type FlashpayClient } from '../client/index.ts';
import { backoffDelayMs } from '../platform/backoff.ts';
export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface SimTarget {
  api: string;
  channel: string;
  adminToken: string;
  /** The double's control token (FLASHPAY_CONTROL_TOKEN), when it asks for one. */
  controlToken?: string;
  buyerToken(user: string): Promise<string>;
}

const RETRY_WINDOW_MS = 90_000;
const REQUEST_TIMEOUT_MS = 15_000;

function isConnectionFailure(error: unknown): boolean {
  const e = error as { name?: string; cause?: { code?: string } };
  return (
    e.name === 'TimeoutError' ||
    ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'].includes(e.cause?.code ?? '') ||
    e.name === 'TypeError'
  );
}

export async function http(
  url: string,
  options: { method?: string; token?: string; body?: unknown; key?: string; retry?: boolean; prefer?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.prefer) headers.prefer = options.prefer;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.key) headers['idempotency-key'] = options.key;
  const deadline = Date.now() + RETRY_WINDOW_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await fetch(url, {
        method: options.method ?? 'GET',
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    } catch (error) {
      if (options.retry === false || !isConnectionFailure(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) =>
        setTimeout(
          resolve,
          backoffDelayMs(attempt + 1, 50, 1000, () => 1),
        ),
      );
    }
  }
}

/** A call to the double's control API, with the control token as Bearer when the double asks for one. */
export function controlHttp(
  target: SimTarget,
  path: string,
  options: { method?: string; body?: unknown } = {},
): Promise<Reply> {
  return http(`${target.channel}${path}`, { ...options, token: target.controlToken });
}

/** fetch for the typed client that rides out a stack restart: the same request, until the deadline. */
async function reconnectingFetch(input: RequestInfo | URL): Promise<Response> {
  const request = input as Request;
  const deadline = Date.now() + RETRY_WINDOW_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(request.clone(), { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch (error) {
      if (!isConnectionFailure(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) =>
        setTimeout(
          resolve,
          backoffDelayMs(attempt + 1, 50, 1000, () => 1),
        ),
      );
    }
  }
}

/** A buyer: the typed client (flashpay/client) with the buyer's token; keyed calls reuse their key on every retry. */
export function buyerClient(target: SimTarget, token: string): FlashpayClient {
  return createFlashpayClient({ baseUrl: target.api, token, fetch: reconnectingFetch as typeof fetch });
}

/** A recovery pass as eager as the API allows: below its floor (the pay timeout) it answers 400 with `minimum`. */
export async function recoverNow(target: SimTarget, staleAfterMs: number) {
  const run = (stale: number) =>
    http(`${target.api}/v1/admin/recovery/run`, {
      method: 'POST',
      token: target.adminToken,
      body: { stale_after_ms: stale },
    });
  const reply = await run(staleAfterMs);
  const minimum = (reply.body as { minimum?: unknown } | undefined)?.minimum;
  return reply.status === 400 && typeof minimum === 'number' ? run(minimum) : reply;
}

const PRICE = 1990;

/** One of the sale's SKUs, at the seed's price, with a hold that outlives the competition window. */
export function createSimSku(target: SimTarget, sku: string, name: string, stock: number) {
  return http(`${target.api}/v1/admin/skus`, {
    method: 'POST',
    token: target.adminToken,
    body: { sku, name, price: PRICE, stock, hold_ttl_ms: 60_000 },
  });
}
