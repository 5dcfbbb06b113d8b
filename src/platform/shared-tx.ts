import { inTx, type Db, type Tx } from './db.ts';
import { GROUP_STALL_MS, groupCollector, MemberFailed } from './group-commit.ts';

// Group commit for writes that are small, independent and each atomic: the transactions that
// arrive while one commits share the next, so a burst of them pays one durable commit, not one
// each (the saga runner's journal writes: docs/benchmarks/journal.md §19). Each member's statements run
// one after another in the shared transaction, as they would in a transaction of its own, and
// what a member commits is exactly its own statements: if one fails, the group rolls back and
// every member runs again alone, so one member's failure is never another's.

export interface SharedTransactions {
  /** Runs `fn` in a transaction, shared with others that arrive meanwhile; resolves after the commit. */
  run<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
}

interface Member {
  fn(tx: Tx): Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export interface SharedOptions {
  /** How long arrivals wait behind a committing group before one goes beside it. */
  windowMs?: number;
  max?: number;
}

/** A member finding no group committing goes at once; the others collect behind it (groupCollector). */
export function sharedTransactions(db: Db, options: SharedOptions = {}): SharedTransactions {
  const collector = groupCollector<Member>(
    { windowMs: options.windowMs ?? GROUP_STALL_MS, max: options.max ?? 32, concurrent: 1 },
    (group) => commitGroup(db, group),
  );
  return {
    run<T>(fn: (tx: Tx) => Promise<T>) {
      return new Promise<T>((resolve, reject) =>
        collector.add({ fn, resolve: resolve as (value: unknown) => void, reject }),
      );
    },
  };
}

async function commitGroup(db: Db, group: Member[]): Promise<void> {
  let results: unknown[];
  try {
    results = await inTx(
      db,
      async (tx) => {
        const out: unknown[] = [];
        for (const member of group) {
          try {
            out.push(await member.fn(tx));
          } catch (error) {
            throw new MemberFailed(error);
          }
        }
        return out;
      },
      { retries: 0 },
    );
  } catch (error) {
    if (error instanceof MemberFailed) {
      // Nothing of the group committed: each runs alone (inTx's retries of a deadlock included)
      // and meets its own outcome.
      await Promise.all(group.map((m) => inTx(db, m.fn).then(m.resolve, m.reject)));
      return;
    }
    // No connection, or the COMMIT's outcome unknown: what each would have met alone.
    for (const member of group) member.reject(error);
    return;
  }
  group.forEach((member, i) => member.resolve(results[i]));
}
