// Exponential backoff with "equal jitter": half of the delay is fixed, half random. The fixed half
// keeps a sink that is down from being hammered; the random half spreads relays that failed together.
// `attempt` is the number of failed attempts so far (1 after the first failure).
export function backoffDelayMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30); // 2^30 × base already exceeds any sane cap
  const ceiling = Math.min(maxMs, baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
