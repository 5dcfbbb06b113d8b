// The calls a buyer makes, over openapi-fetch with the generated types: an Idempotency-Key on
// every create and pay (generated unless given), retried only when that cannot act twice.
import createFetchClient, { type Client } from 'openapi-fetch';
import { adminResources, type AdminResources } from './admin.js';
import { newKey, toResult, unwrap, type KeyedCall, type Result } from './call.js';
import type { paths } from './generated/api.js';
import { retryingFetch, type RetryOptions } from './retry.js';
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
  /** A bearer token (`flashpay token …`); omitted or `undefined` for none. */
  token?: string | undefined;
}

export type PayCall = KeyedCall & { body?: PayRequest | undefined };

/**
 * Every call answers a Result: `ok` with `data`, or a `problem` with its `code`. Nothing throws
 * but the network: a `FlashpayError` with code `NETWORK`.
 */
export interface FlashpayResultClient {
  /** The generated openapi-fetch client, for every operation (`raw.GET('/v1/admin/skus/{sku}', …)`). */
  raw: Client<paths>;
  createOrder(body: CreateOrderRequest, options?: KeyedCall): Promise<Result<CreatedOrder>>;
  pay(orderId: string, options?: PayCall): Promise<Result<PayResult>>;
  /** @deprecated the same call as `pay` (its name before issue 52). */
  payOrder(orderId: string, options?: PayCall): Promise<Result<PayResult>>;
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
  const pay = async (orderId: string, call: PayCall = {}): Promise<Result<PayResult>> => {
    const key = call.idempotencyKey ?? newKey();
    return toResult(
      await raw.POST('/v1/orders/{id}/pay', {
        params: { path: { id: orderId }, header: { 'idempotency-key': key } },
        ...(call.body ? { body: call.body } : {}),
      }),
      key,
    );
  };
  return {
    raw,
    async createOrder(body, call = {}) {
      const key = call.idempotencyKey ?? newKey();
      return toResult(await raw.POST('/v1/orders', { body, params: { header: { 'idempotency-key': key } } }), key);
    },
    pay,
    payOrder: pay,
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

export interface WaitOptions {
  /** Statuses that end the wait (default: PAID and every final status). */
  until?: readonly OrderStatus[] | undefined;
  /** Default 30 000. */
  timeoutMs?: number | undefined;
  /** Default 250. */
  intervalMs?: number | undefined;
}

const FINAL: readonly OrderStatus[] = ['PAID', 'FAILED', 'CANCELLED', 'REFUNDED', 'REJECTED', 'COMPENSATED'];

/**
 * Answers data, throws `FlashpayError` (typed by `code`) for a refusal or `NETWORK`. The buyer's
 * calls are methods; the admin calls are resources (`skus`, `orders`, `attention`, `reconciliation`).
 */
export interface FlashpayClient extends AdminResources {
  raw: Client<paths>;
  /** Results instead of exceptions, with the call's key, replay flag and attempts. */
  results: FlashpayResultClient;
  createOrder(body: CreateOrderRequest, options?: KeyedCall): Promise<CreatedOrder>;
  pay(orderId: string, options?: PayCall): Promise<PayResult>;
  getOrder(orderId: string): Promise<Order>;
  getTimeline(orderId: string): Promise<TimelineEntry[]>;
  cancelOrder(orderId: string): Promise<CancelResult>;
  /** Reads the order until its status is one of `until`; throws a plain Error at the deadline. */
  waitForOrder(orderId: string, options?: WaitOptions): Promise<Order>;
}

/**
 * `createClient({ baseUrl, token })`: the buyer's calls and the admin resources. A create or pay sent again with the same
 * key (by you, or by the client's own retries of a 503/429/in-progress/network error) is a replay:
 * it never creates or charges twice.
 */
export function createClient(options: FlashpayClientOptions): FlashpayClient {
  const results = createFlashpayClient(options);
  return {
    raw: results.raw,
    results,
    ...adminResources(results.raw),
    createOrder: async (body, call) => unwrap(await results.createOrder(body, call)),
    pay: async (orderId, call) => unwrap(await results.pay(orderId, call)),
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
