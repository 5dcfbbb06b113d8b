// The admin calls as resources (`client.skus`, `client.orders`, `client.attention`,
// `client.reconciliation`), over the generated operations. An admin token acts on its tenant.
import type { Client } from 'openapi-fetch';
import type { paths } from './generated/api.js';
import { newKey, toResult, unwrap, type KeyedCall, type ReasonedCall } from './call.js';
import { paged, pageOf, type ListOptions, type Paged } from './paging.js';
import type {
  Acknowledgement,
  AdminCancelResult,
  AdminOrder,
  AttentionItem,
  CreatedSku,
  CreateSkuRequest,
  FoundOrder,
  OrderSearch,
  Reconciliation,
  ReconciliationPass,
  RefundResult,
  RetryResult,
  Sku,
  SkuSummary,
} from './types.js';

export interface SkusResource {
  /** Puts a SKU on sale; 409 `SKU_EXISTS` when the tenant has it already. */
  create(body: CreateSkuRequest): Promise<CreatedSku>;
  /** The SKU and its stock counters; 404 `SKU_NOT_FOUND`. */
  get(sku: string): Promise<Sku>;
  /** Every SKU of the tenant with its counters, a page at a time as you iterate. */
  list(options?: ListOptions): Paged<SkuSummary>;
}

export interface AdminOrdersResource {
  /** The admin view: lines, reservation, payment, recovery, attention, audit trail. */
  get(orderId: string): Promise<AdminOrder>;
  /** Orders newest first, filtered (`q`: an order id, buyer, Idempotency-Key or provider txn). */
  list(search?: Omit<OrderSearch, 'limit' | 'cursor'> & ListOptions): Paged<FoundOrder>;
  /** Refunds a PAID order at its provider (REFUNDING, then REFUNDED). Keyed: a retry never refunds twice. */
  refund(orderId: string, call: ReasonedCall): Promise<RefundResult>;
  /** Cancels an unpaid order as an operator, releasing its units. */
  cancel(orderId: string, call: ReasonedCall): Promise<AdminCancelResult>;
  /** One recovery pass over a stuck order now (UNKNOWN, PAYING, REFUNDING…); answers it after. */
  retry(orderId: string): Promise<RetryResult>;
}

export interface AttentionResource {
  /** The orders that need a person, with the note that says why. */
  list(): Promise<AttentionItem[]>;
  /** Marks an order's note as seen by this operator (it stays in the audit trail). */
  acknowledge(orderId: string): Promise<Acknowledgement>;
}

export interface ReconciliationResource {
  /** The reconciliation report: mismatches by class, pending orders, totals (`ok` when clean). */
  get(options?: { pass?: ReconciliationPass | undefined }): Promise<Reconciliation>;
}

export interface AdminResources {
  skus: SkusResource;
  orders: AdminOrdersResource;
  attention: AttentionResource;
  reconciliation: ReconciliationResource;
}

function keyOf(call: KeyedCall): string {
  return call.idempotencyKey ?? newKey();
}

/** A route the generated document may not describe yet, through the same client (headers, retries). */
type LooseGet = (
  url: string,
  init: { params: { query: Record<string, string> } },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

function listQuery(options: ListOptions, cursor: string | undefined): Record<string, string> {
  return {
    ...(options.pageSize !== undefined ? { limit: String(options.pageSize) } : {}),
    ...(cursor !== undefined ? { cursor } : {}),
  };
}

export function adminResources(raw: Client<paths>): AdminResources {
  const looseGet = raw.GET as unknown as LooseGet;
  return {
    skus: {
      create: async (body) => unwrap(toResult<CreatedSku>(await raw.POST('/v1/admin/skus', { body }))),
      get: async (sku) => unwrap(toResult<Sku>(await raw.GET('/v1/admin/skus/{sku}', { params: { path: { sku } } }))),
      list: (options = {}) =>
        paged(async (cursor) =>
          pageOf<SkuSummary>(
            unwrap(toResult(await looseGet('/v1/admin/skus', { params: { query: listQuery(options, cursor) } }))),
          ),
        ),
    },
    orders: {
      get: async (id) =>
        unwrap(toResult<AdminOrder>(await raw.GET('/v1/admin/orders/{id}', { params: { path: { id } } }))),
      list: ({ pageSize, ...search } = {}) =>
        paged(async (cursor) =>
          pageOf<FoundOrder>(
            unwrap(
              toResult(
                await raw.GET('/v1/admin/orders', {
                  params: { query: { ...search, ...listQuery({ pageSize }, cursor) } },
                }),
              ),
            ),
          ),
        ),
      async refund(id, call) {
        const key = keyOf(call);
        return unwrap(
          toResult<RefundResult>(
            await raw.POST('/v1/admin/orders/{id}/refund', {
              params: { path: { id }, header: { 'idempotency-key': key } },
              body: { reason: call.reason },
            }),
            key,
          ),
        );
      },
      async cancel(id, call) {
        const key = keyOf(call);
        return unwrap(
          toResult<AdminCancelResult>(
            await raw.POST('/v1/admin/orders/{id}/cancel', {
              params: { path: { id }, header: { 'idempotency-key': key } },
              body: { reason: call.reason },
            }),
            key,
          ),
        );
      },
      retry: async (id) =>
        unwrap(toResult<RetryResult>(await raw.POST('/v1/admin/orders/{id}/retry', { params: { path: { id } } }))),
    },
    attention: {
      list: async () => unwrap(toResult<{ orders: AttentionItem[] }>(await raw.GET('/v1/admin/attention', {}))).orders,
      acknowledge: async (id) =>
        unwrap(toResult<Acknowledgement>(await raw.POST('/v1/admin/attention/{id}/ack', { params: { path: { id } } }))),
    },
    reconciliation: {
      get: async ({ pass } = {}) =>
        unwrap(
          toResult<Reconciliation>(
            await raw.GET('/v1/admin/reconciliation', { params: { query: pass ? { pass } : {} } }),
          ),
        ),
    },
  };
}
