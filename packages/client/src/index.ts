// @flashpay/client: a typed client for the flashpay API (Node 20 and browsers). The types are
// generated from the served OpenAPI document (src/generated/api.ts, `npm run openapi:client`).
export type { components, operations, paths, webhooks } from './generated/api.js';
export {
  createClient,
  createFlashpayClient,
  type FlashpayClient,
  type FlashpayClientOptions,
  type FlashpayResultClient,
  type PayCall,
  type WaitOptions,
} from './client.js';
export type { CallMeta, KeyedCall, ReasonedCall, Result } from './call.js';
export type {
  AdminOrdersResource,
  AdminResources,
  AttentionResource,
  ReconciliationResource,
  SkusResource,
} from './admin.js';
export { MAX_PAGES, type ListOptions, type Page, type Paged } from './paging.js';
export {
  CLIENT_ERROR_CODES,
  FlashpayError,
  isFlashpayError,
  isProblemCode,
  PROBLEM_CODES,
  type ClientErrorCode,
  type ErrorCode,
  type Problem,
  type ProblemCode,
} from './problems.js';
export { retryingFetch, type RetryOptions } from './retry.js';
export {
  assertSignature,
  constructEvent,
  DEFAULT_TOLERANCE_SECONDS,
  MAX_SIGNATURES,
  MIN_SECRET_BYTES,
  SIGNATURE_HEADER,
  signPayload,
  verifySignature,
  WEBHOOK_ERROR_REASONS,
  WebhookSignatureError,
  type VerifyOptions,
  type WebhookErrorReason,
} from './webhook.js';
export type * from './types.js';
