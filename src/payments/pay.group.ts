import { mutant } from '../platform/mutations.ts';
import { GROUP_STALL_MS, groupCollector, MemberFailed } from '../platform/group-commit.ts';
import { allOf, inTx } from '../platform/db.ts';
import { applyOrderEvents, type AppliedEvent } from '../orders/index.ts';
import { recordAnswer } from './settle.ts';
import type { PayAnswer, PayCommits, PaymentDeps } from './payments.deps.ts';

// Group commit of the pays' last transactions (the provider's answer applied, the key completed).
// Under load every pay waited for a durable commit of its own and a pool connection for it; the
// pays that reach this step within a few milliseconds of each other now share one transaction:
// the answers applied set-based (applyOrderEvents, as recovery does: orders and reservations
// locked in one statement each, the transitions written in one), then each pay's key completed
// with its own response, one durable commit. Each order's effect and its key still commit
// together. Never across a provider call: a pay joins a group only with its answer in hand.

interface Member {
  item: PayAnswer;
  resolve(value: AppliedEvent): void;
  reject(error: unknown): void;
}

type Deps = Pick<PaymentDeps, 'db' | 'clock'>;

export interface GroupOptions {
  /** How long arriving pays wait behind committing groups before one goes beside them (GROUP_STALL_MS). */
  windowMs?: number;
  /** A group this large commits at once. */
  max?: number;
  /**
   * Groups that may commit at once before arriving pays start to collect (0: always collect). One
   * rather than two: larger groups at 64 buyers (p50 3 pays, not 2), fewer commits (docs/benchmarks/journal.md §6).
   */
  concurrent?: number;
}

/**
 * A pay that finds fewer than `concurrent` groups committing commits at once (no wait when the
 * service is idle); otherwise the pays that arrive collect, and go as one group when a group ends,
 * after `windowMs`, or at `max`, whichever is first.
 */
export function groupPayCommits(deps: Deps, options: GroupOptions = {}): PayCommits {
  const windowMs = options.windowMs ?? GROUP_STALL_MS;
  const max = options.max ?? 32;
  const concurrent = options.concurrent ?? 1;
  const exclusive = oncePerOrder<Member>(
    (m) => m.item.orderId,
    (group) => commitGroup(deps, group),
  );
  const collector = groupCollector<Member>({ windowMs, max, concurrent, take: exclusive.take }, exclusive.commit);
  return {
    record(item) {
      return new Promise<AppliedEvent>((resolve, reject) => collector.add({ item, resolve, reject }));
    },
  };
}

/**
 * A group applies one event per order, and never one of an order a committing group holds: a
 * pay's answer and the provider's notification of the same charge often arrive together, and the
 * second waits for the first's group to end (then goes, in arrival order). Two groups that shared
 * an order would wait on its row lock, the second holding its other orders' locks meanwhile, and
 * the groups behind it on those: a convoy (docs/benchmarks/journal.md §11). `take` and `commit` go to the
 * collector together: `commit` frees a group's orders when it ends, before the next take.
 */
export function oncePerOrder<M>(orderOf: (member: M) => string, commit: (group: M[]) => Promise<void>) {
  const busy = new Set<string>();
  return {
    take(waiting: M[]): [M[], M[]] {
      const group: M[] = [];
      const later: M[] = [];
      for (const m of waiting) {
        if (busy.has(orderOf(m))) later.push(m);
        else {
          busy.add(orderOf(m));
          group.push(m);
        }
      }
      return [group, later];
    },
    commit: (group: M[]) =>
      commit(group).finally(() => {
        for (const m of group) busy.delete(orderOf(m));
      }),
  };
}

/** One pay in a transaction of its own, exactly as without grouping (inTx's retries included). */
async function alone(deps: Deps, { item, resolve, reject }: Member): Promise<void> {
  try {
    resolve(await recordAnswer(deps, item.orderId, item.answer, item.complete));
  } catch (error) {
    reject(error);
  }
}

async function commitGroup(deps: Deps, group: Member[]): Promise<void> {
  // A group of one takes this path too: pipelined, with its reads sent together (fewer round trips than alone).
  let applied: AppliedEvent[];
  try {
    applied = await inTx(
      deps.db,
      async (tx) => {
        try {
          const items = group.map((m) => ({ orderId: m.item.orderId, event: m.item.answer }));
          const out = await applyOrderEvents(tx, items, deps.clock.now());
          // Each member's completion is its own rows (its key, or its notification's record): sent
          // together, not one round trip each while the group holds its orders' locks.
          await allOf(
            tx,
            group.map((m, i) => () => m.item.complete(tx, out[i]!)),
          );
          return out;
        } catch (error) {
          throw new MemberFailed(error);
        }
      },
      // Pipelined: BEGIN leaves with the group's three locking reads (one write); later statements
      // sent together go out without waiting for each other's answers.
      { retries: 0, pipeline: true },
    );
  } catch (error) {
    // A statement failed (one pay's completion, a deadlock, a lock timeout): the group rolled back,
    // so each pay runs alone and meets its own outcome; one pay's failure is not the others'.
    if (error instanceof MemberFailed && !mutant('payments.group.members-alone'))
      return void (await Promise.all(group.map((m) => alone(deps, m))));
    // No connection, or the COMMIT's outcome is unknown: what each would have met alone.
    for (const member of group) member.reject(error);
    return;
  }
  group.forEach((member, i) => member.resolve(applied[i]!));
}
