/** A bound on calls in flight: a provider limits its callers, and recovery must not flood it. */
export interface CallLimit {
  <T>(call: () => Promise<T>): Promise<T>;
  /** Resolves once at most `n` calls wait for a slot: the time to hand the limit more work. */
  short(n: number): Promise<void>;
}

export function callLimit(max: number): CallLimit {
  let active = 0;
  const waiting: Array<() => void> = [];
  const watchers: Array<{ n: number; resolve: () => void }> = [];
  const wake = () => {
    for (let i = watchers.length - 1; i >= 0; i--) {
      const w = watchers[i]!;
      if (waiting.length <= w.n) {
        watchers.splice(i, 1);
        w.resolve();
      }
    }
  };
  const limit = async <T>(call: () => Promise<T>): Promise<T> => {
    if (active >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await call();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
      wake();
    }
  };
  const short = (n: number) =>
    waiting.length <= n ? Promise.resolve() : new Promise<void>((resolve) => watchers.push({ n, resolve }));
  return Object.assign(limit, { short });
}
