import { inTx, pgCode, sendWithCommit } from '../platform/db.ts';
import { mutant } from '../platform/mutations.ts';
import { inProgress, keyReused } from './idempotency.errors.ts';
import { findKey, insertDoneKeyWithCommit } from './idempotency.repo.ts';
import type { KeyClaim, KeyedDeps, KeyedOperation } from './idempotency.types.ts';

const LOCK_NOT_AVAILABLE = '55P03';
const UNIQUE_VIOLATION = '23505';
const KEY_CONSTRAINT = 'idempotency_keys_pkey';

/**
 * The claim of an operation whose answer is known before its commit (`finalOnly`). The key is read
 * behind BEGIN; if it is absent, the operation runs and its key is INSERTed once, DONE, with the
 * COMMIT: one row version and one index entry per key, where a PROCESSING row completed by an
 * UPDATE costs two of each (the completion changes `state`, the partial index's predicate, so it
 * is never a HOT update) and leaves a dead tuple behind.
 *
 * Two requests with one key at once (two processes: within one, oncePerKeyInProcess queues them)
 * both run the operation. The second's INSERT waits for the first's commit and then fails on the
 * primary key, which turns its COMMIT into a rollback of its whole effect; it then reads the first's
 * record and replays it, or refuses a different request. A wait past `waitMs` (the other request is
 * still running) is REQUEST_IN_PROGRESS, as in the insert-first claim.
 */
export async function claimOnce(deps: KeyedDeps, op: KeyedOperation): Promise<KeyClaim> {
  const pipelined = deps.pipeline ?? true;
  let committing = false;
  try {
    return await inTx(
      deps.db,
      async (tx): Promise<KeyClaim> => {
        committing = false;
        const now = deps.clock.now();
        // The first statement: pipelined, it leaves in the same write as BEGIN, and the
        // operation's read-only prefetch with it, before we know whether the key is ours.
        const reading = findKey(tx, op.scope);
        if (pipelined) op.prefetch?.(tx);
        const record = await reading;
        if (record && !mutant('idempotency.key.unique', op.scope.key)) {
          if (record.digest !== op.digest) throw keyReused();
          return { owned: false, record };
        }
        const step = await op.start(tx);
        if (!('final' in step)) throw new Error(`${op.scope.operation} is finalOnly but did not answer before commit`);
        insertDoneKeyWithCommit(tx, op.scope, op.digest, step.final, now);
        if (step.durable === false) sendWithCommit(tx, { text: 'SET LOCAL synchronous_commit = off' });
        committing = true;
        return { owned: true, step };
      },
      { lockTimeoutMs: deps.waitMs, pipeline: pipelined },
    );
  } catch (error) {
    if (!committing) throw error;
    // Only the key's INSERT and the COMMIT were left: the error is the key's.
    if (pgCode(error) === LOCK_NOT_AVAILABLE) throw inProgress();
    if (pgCode(error) !== UNIQUE_VIOLATION || (error as { constraint?: string }).constraint !== KEY_CONSTRAINT)
      throw error;
    // Committed a moment ago (a purge takes only keys days old).
    const record = await findKey(deps.db, op.scope);
    if (!record) throw new Error('idempotency key vanished');
    if (record.digest !== op.digest) throw keyReused();
    return { owned: false, record };
  }
}
