/** Nearest-rank percentile of an ascending array; 0 for an empty one. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0;
}

export interface LatencySummary {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export function summarize(samplesMs: readonly number[]): LatencySummary {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return {
    p50Ms: round(percentile(sorted, 50), 2),
    p99Ms: round(percentile(sorted, 99), 2),
    maxMs: round(sorted[sorted.length - 1] ?? 0, 2),
  };
}

export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** a / b, rounded; null when the baseline measured nothing (a ratio to zero means nothing). */
export function ratio(a: number, b: number): number | null {
  return b > 0 ? round(a / b, 3) : null;
}

export function perSecond(count: number, elapsedMs: number): number {
  return elapsedMs > 0 ? round((count * 1000) / elapsedMs, 1) : 0;
}
