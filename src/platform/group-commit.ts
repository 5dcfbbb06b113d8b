// The collector behind every group commit of a single process (the pays' first and last commits):
// a member that finds fewer than `concurrent` groups committing goes at once, so an idle service
// adds no wait; otherwise members collect and go as one group when a group ends, after `windowMs`,
// or at `max`, whichever is first.

export interface GroupCollectorOptions<M> {
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
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const [group, later] = take(waiting);
    waiting = later;
    if (group.length === 0) return;
    committing++;
    void commit(group).finally(() => {
      committing--;
      // A member held back (or arrived meanwhile) goes now, or when its window ends.
      if (waiting.length > 0 && committing < options.concurrent) flush();
      else if (waiting.length > 0) timer ??= setTimeout(flush, options.windowMs);
    });
  };
  return {
    add(member) {
      waiting.push(member);
      if (committing < options.concurrent || waiting.length >= options.max) flush();
      else timer ??= setTimeout(flush, options.windowMs);
    },
  };
}
