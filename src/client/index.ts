// flashpay/client: a typed client for the flashpay API. The types are generated from the served
// OpenAPI document (src/client/api.d.ts, `npm run openapi:client`); the calls go through
// openapi-fetch, with idempotency keys and safe retries added here.
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import createClient, { type Client } from 'openapi-fetch';
import type { ErrorCode } from '../platform/errors.ts';
import { verifySignature as verify } from '../platform/signature.ts';
import type { components, operations, paths } from './api.d.ts';

export type { components, operations, paths };

/** Every `code` a problem+json answer can carry. */
export type ProblemCode = ErrorCode;

/** An RFC 9457 problem as flashpay sends it; extra members (e.g. `order_status`) may follow. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  [extra: string]: unknown;
}

export interface FlashpayClientOptions {
  /** e.g. `http://127.0.0.1:8080` */
  baseUrl: string;
  /** A bearer token (`flashpay token …`); omitted for none. */
  token?: string;
  /** Attempts per call, the first included (default 4). */
  maxAttempts?: number;
  /** Longest wait honoured from a Retry-After, in ms (default 5000). */
  maxRetryAfterMs?: number;
  /** Backoff base for network errors, in ms (default 100, doubling). */
  backoffMs?: number;
  fetch?: typeof fetch;
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

type Json<Op, Status extends number> = Op extends {
  responses: { [S in Status]: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

export type CreateOrderRequest = NonNullable<operations['createOrder']['requestBody']>['content']['application/json'];
export type CreatedOrder = Json<operations['createOrder'], 201>;
export type Order = Json<operations['getOrder'], 200>;
export type PayResult = Json<operations['payOrder'], 200>;
export type TimelineEntry = Json<operations['getOrderTimeline'], 200>[number];
export type CancelResult = Json<operations['cancelOrder'], 200>;
export type NotificationEffect = Json<operations['receivePaymentNotification'], 200>['effect'];

const ATTEMPTS = Symbol('attempts');
type Counted = Response & { [ATTEMPTS]?: number };

function isKeyed(request: Request): boolean {
  return request.headers.has('idempotency-key');
}

function retryAfterMs(response: Response, max: number): number | undefined {
  const header = response.headers.get('retry-after');
  if (header === null) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Math.min(Math.max(0, ms), max);
}

/**
 * Retries only what cannot do harm: a 503 or 429 that says when to come back (nothing was executed),
 * a 409 REQUEST_IN_PROGRESS of a keyed request (the first is still running; the key makes the retry
 * a replay), and network errors of keyed or GET requests. Every retry sends the same request, the
 * same Idempotency-Key included.
 */
export function retryingFetch(
  options: Pick<FlashpayClientOptions, 'maxAttempts' | 'maxRetryAfterMs' | 'backoffMs' | 'fetch'> = {},
) {
  const send = options.fetch ?? fetch;
  const maxAttempts = options.maxAttempts ?? 4;
  const maxWait = options.maxRetryAfterMs ?? 5000;
  const backoff = options.backoffMs ?? 100;
  return async (input: Request): Promise<Response> => {
    const replayable = isKeyed(input) || input.method === 'GET' || input.method === 'HEAD';
    for (let attempt = 1; ; attempt++) {
      let response: Counted;
      try {
        response = await send(input.clone());
      } catch (error) {
        if (!replayable || attempt >= maxAttempts) throw error;
        await delay(backoff * 2 ** (attempt - 1));
        continue;
      }
      response[ATTEMPTS] = attempt;
      if (attempt >= maxAttempts) return response;
      const wait = retryAfterMs(response, maxWait);
      const retriable =
        response.status === 503 || response.status === 429 || (response.status === 409 && isKeyed(input));
      if (!retriable || wait === undefined) return response;
      if (response.status === 409) {
        const body = (await response
          .clone()
          .json()
          .catch(() => ({}))) as { code?: string };
        if (body.code !== 'REQUEST_IN_PROGRESS') return response;
      }
      await response.body?.cancel();
      await delay(wait);
    }
  };
}

function meta(response: Response, idempotencyKey?: string): CallMeta {
  const replayed = response.headers.get('idempotent-replayed');
  return {
    status: response.status,
    attempts: (response as Counted)[ATTEMPTS] ?? 1,
    ...(idempotencyKey ? { idempotencyKey } : {}),
    ...(replayed !== null ? { replayed: replayed === 'true' } : {}),
    ...(response.headers.get('location') ? { location: response.headers.get('location') as string } : {}),
  };
}

function toResult<T>(
  outcome: { data?: unknown; error?: unknown; response: Response },
  idempotencyKey?: string,
): Result<T> {
  if (outcome.response.ok) return { ok: true, data: outcome.data as T, ...meta(outcome.response, idempotencyKey) };
  return { ok: false, problem: outcome.error as Problem, ...meta(outcome.response, idempotencyKey) };
}

export interface FlashpayClient {
  /** The generated openapi-fetch client, for every operation (`raw.GET('/v1/admin/skus/{sku}', …)`). */
  raw: Client<paths>;
  createOrder(body: CreateOrderRequest, options?: { idempotencyKey?: string }): Promise<Result<CreatedOrder>>;
  payOrder(orderId: string, options?: { idempotencyKey?: string }): Promise<Result<PayResult>>;
  getOrder(orderId: string): Promise<Result<Order>>;
  getTimeline(orderId: string): Promise<Result<TimelineEntry[]>>;
  cancelOrder(orderId: string): Promise<Result<CancelResult>>;
}

/** A client for one principal. Keyed calls generate an Idempotency-Key unless given one. */
export function createFlashpayClient(options: FlashpayClientOptions): FlashpayClient {
  const raw = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: retryingFetch(options),
    ...(options.token ? { headers: { authorization: `Bearer ${options.token}` } } : {}),
  });
  return {
    raw,
    async createOrder(body, callOptions = {}) {
      const key = callOptions.idempotencyKey ?? randomUUID();
      return toResult(await raw.POST('/v1/orders', { body, params: { header: { 'idempotency-key': key } } }), key);
    },
    async payOrder(orderId, callOptions = {}) {
      const key = callOptions.idempotencyKey ?? randomUUID();
      return toResult(
        await raw.POST('/v1/orders/{id}/pay', {
          params: { path: { id: orderId }, header: { 'idempotency-key': key } },
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

/**
 * For integrators receiving flashpay's signed POSTs (payment notifications, order events): true when
 * `header` (`Flashpay-Signature`) is a valid HMAC of the exact raw body under `secret`, made within
 * `toleranceSeconds` of now.
 */
export function verifySignature(
  secret: string,
  header: string | null | undefined,
  rawBody: string | Buffer,
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): boolean {
  return verify(
    secret,
    header ?? undefined,
    typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8'),
    options.toleranceSeconds ?? 300,
    options.nowSeconds ?? Math.floor(Date.now() / 1000),
  ).ok;
}
