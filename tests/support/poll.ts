/** The one poller: waits on state, never on a guessed sleep. Resolves with the first truthy probe. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 10_000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** waitFor for a probe whose value is judged by `holds`; the last value is named on timeout. */
export async function waitUntil<T>(
  probe: () => Promise<T>,
  holds: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  let last: T | undefined;
  const found = await waitFor(
    async () => {
      last = await probe();
      return holds(last) ? { value: last } : undefined;
    },
    'state',
    timeoutMs,
    10,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; last: ${JSON.stringify(last)}`);
  });
  return found.value;
}
