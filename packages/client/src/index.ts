// @flashpay/client: a typed client for the flashpay API (Node 20 and browsers). The types are
// generated from the served OpenAPI document (src/generated/api.ts, `npm run openapi:client`).
export type { components, operations, paths, webhooks } from './generated/api.js';
export {
  createClient,
  createFlashpayClient,
  type CallMeta,
  type FlashpayClient,
  type FlashpayClientOptions,
  type FlashpayResultClient,
  type KeyedCall,
  type Result,
  type WaitOptions,
} from './client.js';
export {
  FlashpayError,
  isFlashpayError,
  isProblemCode,
  PROBLEM_CODES,
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
