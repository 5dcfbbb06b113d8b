// The words of keyed execution, shared by the insert-first claim (idempotency.service.ts) and the
// write-once claim (idempotency.once.ts): a leaf, so neither claim imports the other's file for them.
import type { Clock } from '../platform/clock.ts';
import type { Db, Tx } from '../platform/db.ts';
import type { KeyRecord, KeyScope, StoredResponse } from './idempotency.repo.ts';

export interface KeyedDeps {
  db: Db;
  clock: Clock;
  /** How long a second request with an in-flight key waits before REQUEST_IN_PROGRESS. */
  waitMs: number;
  /** How long a PROCESSING key belongs to its owner before another request may take it over. */
  leaseMs: number;
  /**
   * The claim's transaction pipelined (default): BEGIN sent with the key's INSERT, the completion
   * (guarded in SQL) with COMMIT: two round trips of six fewer. `false` for the A/B bench.
   */
  pipeline?: boolean;
}

export interface KeyedResult extends StoredResponse {
  replayed: boolean;
}

/**
 * What the operation does once it owns the key, inside the claiming transaction. Either the
 * response is known before commit (`final`: the key is completed in the same commit as the
 * effect), or the operation continues after commit (`continueWith`, for /pay, which calls the provider
 * between commits) and completes the key itself through `complete` in its last transaction.
 */
export type KeyedStep =
  /**
   * `durable: false` for an answer that changed nothing but the key (a SOLD_OUT): its commit need
   * not wait for the WAL flush. Lost in a crash, the retry simply executes again.
   */
  | { final: StoredResponse; durable?: boolean }
  | { continueWith: (complete: (tx: Tx, response: StoredResponse) => Promise<void>) => Promise<StoredResponse> };

export interface KeyedOperation {
  scope: KeyScope;
  digest: string;
  start(tx: Tx): Promise<KeyedStep>;
  /**
   * `start` always answers `final`: the key is then written once, DONE, with the effect's COMMIT,
   * never as a PROCESSING row that an UPDATE completes (idempotency.once.ts).
   */
  finalOnly?: boolean;
  /**
   * Read-only statements a final-only claim sends with the key's read, in its round trip (only
   * when the transaction is pipelined); `start` then awaits their results instead of reading.
   * They run whether or not the key turns out to be this request's: they must not write.
   */
  prefetch?(tx: Tx): void;
  /** Answers for a key whose owner died mid-way (lease expired); runs in the takeover transaction. */
  abandoned?(tx: Tx): Promise<StoredResponse>;
}

/** A claim's outcome: this request owns the key (with its first step), or an earlier one does. */
export type KeyClaim = { owned: true; step: KeyedStep } | { owned: false; record: KeyRecord };
