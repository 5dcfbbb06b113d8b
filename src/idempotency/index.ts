// The idempotency domain's public surface: keyed execution of an operation and its HTTP helpers.
export { requestDigest } from './digest.ts';
export { idempotencyKeyOf, jsonResponse, problemResponse, sendKeyed } from './idempotency.http.ts';
export { purgeCompletedKeys, type StoredResponse } from './idempotency.repo.ts';
export {
  executeKeyed,
  executeKeyedNow,
  oncePerKeyInProcess,
  type KeyedDeps,
  type KeyedOperation,
  type KeyedResult,
  type KeyedStep,
} from './idempotency.service.ts';
export type { KeyScope } from './idempotency.repo.ts';
export { claimKeyAlone, claimKeyIn, claimKeysIn, executeKeyedWith, type KeyClaim } from './idempotency.service.ts';
