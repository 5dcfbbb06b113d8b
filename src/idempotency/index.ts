// The idempotency domain's public surface: keyed execution of an operation and its HTTP helpers.
export { requestDigest } from './digest.ts';
export { idempotencyKeyOf, jsonResponse, problemResponse, sendKeyed } from './idempotency.http.ts';
export { purgeCompletedKeys, type StoredResponse } from './idempotency.repo.ts';
export { executeKeyed, executeKeyedNow, oncePerKeyInProcess } from './idempotency.service.ts';
export type { KeyClaim, KeyedDeps, KeyedOperation, KeyedResult, KeyedStep } from './idempotency.types.ts';
export type { KeyScope } from './idempotency.repo.ts';
export { claimKeyAlone, claimKeyIn, claimKeysIn, executeKeyedWith } from './idempotency.service.ts';
export { findOrderIdsByKey } from './idempotency.search.ts';
