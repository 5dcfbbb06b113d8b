// The collector behind every group commit of a single process (the pays' first and last commits):
// a member that finds fewer than `concurrent` groups committing goes at once, so an idle service
// adds no wait; otherwise members collect and go as one group when a group ends, after `windowMs`,
// or at `max`, whichever is first.

import { groupSpan, joinedBy, tracingOn, type MemberTrace } from './tracing.group.ts';

/**
 * The pays' `windowMs`: how long members wait behind a committing group before another group goes
 * beside it. Above a group's commit time under load, so that the window only bounds a stalled
 * commit (a lock wait) and the groups are what group commit makes them: all that arrived while
 * the last one committed. At 2 ms, on 2 saturated cores where a group takes 10–30 ms, the timer
 * sent a group of one or two pays every 2 ms beside the one committing: more transactions, more
 * wake-ups of PostgreSQL, and P3 at 20 buyers 15–20 % lower (docs/benchmarks/journal.md §18).
 */
export const GROUP_STALL_MS = 25;

export interface GroupCollectorOptions<M> {
  /** How long members wait while `concurrent` groups commit before a group goes beside them. */
  windowMs: number;
  max: number;
  /** Groups that may commit at once before arriving members start to collect. */
  concurrent: number;
  /**
   * Splits what waits into this group and the members held for a later one (default: all now). A
   * take that holds every member back sends nothing: they go when a committing group ends.
   */
  take?: (waiting: M[]) => [group: M[], later: M[]];
}

export interface GroupCollector<M> {
  add(member: M): void;
}

/** `commit` settles each member itself; a rejection of it is the caller's bug, not a member's answer. */
export function groupCollector<M>(
  options: GroupCollectorOptions<M>,
  commit: (group: M[]) => Promise<void>,
): GroupCollector<M> {
  const take = options.take ?? ((waiting: M[]): [M[], M[]] => [waiting, []]);
  let waiting: M[] = [];
  let timer: NodeJS.Timeout | undefined;
  // A count, not a flag: a group sent at `max` can be committing beside another.
  let committing = 0;
  // Each member's trace, while tracing is on: the group's span links to every member's.
  const traces = new Map<M, MemberTrace>();
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const [group, later] = take(waiting);
    waiting = later;
    if (group.length === 0) return;
    committing++;
    const committed = traces.size === 0 ? commit(group) : groupSpan(group, traces, () => commit(group));
    void committed.finally(() => {
      committing--;
      // A member held back (or arrived meanwhile) goes now, or when its window ends.
      if (waiting.length > 0 && committing < options.concurrent) flush();
      else if (waiting.length > 0) timer ??= setTimeout(flush, options.windowMs);
    });
  };
  return {
    add(member) {
      if (tracingOn()) joinedBy(traces, member);
      waiting.push(member);
      if (committing < options.concurrent || waiting.length >= options.max) flush();
      else timer ??= setTimeout(flush, options.windowMs);
    },
  };
}

/**
 * A member's statement failed inside a group's transaction: the group rolled back and nothing of
 * it committed, so each member can run again alone and meet its own outcome (the pays' groups,
 * shared-tx.ts). Any other failure (no connection, a COMMIT whose outcome is unknown) is not this.
 */
export class MemberFailed extends Error {
  constructor(cause: unknown) {
    super('a member of the group failed', { cause });
  }
}
