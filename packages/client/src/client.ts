// The calls a buyer makes, over openapi-fetch with the generated types: an Idempotency-Key on
// every create and pay (generated unless given), retried only when that cannot act twice.
import createFetchClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/api.js';
import { FlashpayError, problemOf, type Problem } from './problems.js';
import { attemptsOf, retryingFetch, type RetryOptions } from './retry.js';
import type {
  CancelResult,
  CreatedOrder,
  CreateOrderRequest,
  Order,
  OrderStatus,
  PayRequest,
  PayResult,
  TimelineEntry,
} from './types.js';

export interface FlashpayClientOptions extends RetryOptions {
  /** e.g. `http://127.0.0.1:8080` */
  baseUrl: string;
  /** A bearer token (`flashpay token …`); omitted for none. */
  token?: string;
}

export interface CallMeta {
  status: number;
  /** The key the call was sent with (generated when none was given); reuse it to retry later. */
  idempotencyKey?: string;
  /** `Idempotent-Replayed` of a keyed answer. */
  replayed?: boolean;
  location?: string;
  /** How many times the request was sent. */
  attempts: number;
}

export type Result<T> = (
  { ok: true; data: T; problem?: undefined } | { ok: false; data?: undefined; problem: Problem }
) &
  CallMeta;

function newKey(): string {
  return globalThis.crypto.randomUUID();
}

function meta(response: Response, idempotencyKey?: string): CallMeta {
  const replayed = response.headers.get('idempotent-replayed');
  const location = response.headers.get('location');
  return {
    status: response.status,
    attempts: attemptsOf(response),
    ...(idempotencyKey ? { idempotencyKey } : {}),
    ...(replayed !== null ? { replayed: replayed === 'true' } : {}),
    ...(location ? { location } : {}),
  };
}

function toResult<T>(
  outcome: { data?: unknown; error?: unknown; response: Response },
  idempotencyKey?: string,
): Result<T> {
  if (outcome.response.ok) return { ok: true, data: outcome.data as T, ...meta(outcome.response, idempotencyKey) };
  const problem = problemOf(outcome.response.status, outcome.error);
  return { ok: false, problem, ...meta(outcome.response, idempotencyKey) };
}

export interface KeyedCall {
  /** Sent as Idempotency-Key; a fresh UUID when omitted. Reuse a key to retry a call later, safely. */
  idempotencyKey?: string;
}

/** Every call answers a Result: `ok` with `data`, or a `problem` with its `code`. Nothing throws but the network. */
export interface FlashpayResultClient {
  /** The generated openapi-fetch client, for every operation (`raw.GET('/v1/admin/skus/{sku}', …)`). */
  raw: Client<paths>;
  createOrder(body: CreateOrderRequest, options?: KeyedCall): Promise<Result<CreatedOrder>>;
  payOrder(orderId: string, options?: KeyedCall & { body?: PayRequest }): Promise<Result<PayResult>>;
  getOrder(orderId: string): Promise<Result<Order>>;
  getTimeline(orderId: string): Promise<Result<TimelineEntry[]>>;
  cancelOrder(orderId: string): Promise<Result<CancelResult>>;
}

/** The Result-style client (no exceptions for refusals). `createClient` is the same calls, throwing. */
export function createFlashpayClient(options: FlashpayClientOptions): FlashpayResultClient {
  const raw = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    fetch: retryingFetch(options),
    ...(options.token ? { headers: { authorization: `Bearer ${options.token}` } } : {}),
  });
  return {
    raw,
    async createOrder(body, call = {}) {
      const key = call.idempotencyKey ?? newKey();
      return toResult(await raw.POST('/v1/orders', { body, params: { header: { 'idempotency-key': key } } }), key);
    },
    async payOrder(orderId, call = {}) {
      const key = call.idempotencyKey ?? newKey();
      return toResult(
        await raw.POST('/v1/orders/{id}/pay', {
          params: { path: { id: orderId }, header: { 'idempotency-key': key } },
          ...(call.body ? { body: call.body } : {}),
        }),
        key,
      );
    },
    async getOrder(orderId) {
      return toResult(await raw.GET('/v1/orders/{id}', { params: { path: { id: orderId } } }));
    },
    async getTimeline(orderId) {
      return toResult(await raw.GET('/v1/orders/{id}/timeline', { params: { path: { id: orderId } } }));
    },
    async cancelOrder(orderId) {
      return toResult(await raw.POST('/v1/orders/{id}/cancel', { params: { path: { id: orderId } } }));
    },
  };
}

function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.data;
  throw new FlashpayError(result.problem, result.idempotencyKey);
}

export interface WaitOptions {
  /** Statuses that end the wait (default: PAID and every final status). */
  until?: readonly OrderStatus[];
  /** Default 30 000. */
  timeoutMs?: number;
  /** Default 250. */
  intervalMs?: number;
}

const FINAL: readonly OrderStatus[] = ['PAID', 'FAILED', 'CANCELLED', 'REFUNDED', 'REJECTED', 'COMPENSATED'];

/** Answers data, throws `FlashpayError` (typed by `code`) for a refusal. */
export interface FlashpayClient {
  raw: Client<paths>;
  /** Results instead of exceptions, with the call's key, replay flag and attempts. */
  results: FlashpayResultClient;
  createOrder(body: CreateOrderRequest, options?: KeyedCall): Promise<CreatedOrder>;
  pay(orderId: string, options?: KeyedCall & { body?: PayRequest }): Promise<PayResult>;
  getOrder(orderId: string): Promise<Order>;
  getTimeline(orderId: string): Promise<TimelineEntry[]>;
  cancelOrder(orderId: string): Promise<CancelResult>;
  /** Reads the order until its status is one of `until`; throws a plain Error at the deadline. */
  waitForOrder(orderId: string, options?: WaitOptions): Promise<Order>;
}

/**
 * `createClient({ baseUrl, token })`: the buyer's calls. A create or pay sent again with the same
 * key (by you, or by the client's own retries of a 503/429/in-progress/network error) is a replay:
 * it never creates or charges twice.
 */
export function createClient(options: FlashpayClientOptions): FlashpayClient {
  const results = createFlashpayClient(options);
  return {
    raw: results.raw,
    results,
    createOrder: async (body, call) => unwrap(await results.createOrder(body, call)),
    pay: async (orderId, call) => unwrap(await results.payOrder(orderId, call)),
    getOrder: async (orderId) => unwrap(await results.getOrder(orderId)),
    getTimeline: async (orderId) => unwrap(await results.getTimeline(orderId)),
    cancelOrder: async (orderId) => unwrap(await results.cancelOrder(orderId)),
    async waitForOrder(orderId, wait = {}) {
      const until = wait.until ?? FINAL;
      const deadline = Date.now() + (wait.timeoutMs ?? 30_000);
      for (;;) {
        const order = unwrap(await results.getOrder(orderId));
        if (until.includes(order.status)) return order;
        if (Date.now() > deadline)
          throw new Error(`order ${orderId} is ${order.status}, not ${until.join('/')}, after the wait`);
        await new Promise((resolve) => setTimeout(resolve, wait.intervalMs ?? 250));
      }
    },
  };
}
