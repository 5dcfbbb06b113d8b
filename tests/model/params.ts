import type fc from 'fast-check';

/**
 * fast-check parameters, replayable from the environment (docs/testing.md):
 * FLASHPAY_FC_SEED and FLASHPAY_FC_PATH replay a printed failure, FLASHPAY_FC_RUNS runs more.
 */
export function fcParams<T>(defaultRuns: number): fc.Parameters<T> {
  const env = process.env;
  const params: fc.Parameters<T> = {
    // A path replays one run: the failing one, not the ones after it.
    numRuns: env.FLASHPAY_FC_RUNS ? Number(env.FLASHPAY_FC_RUNS) : env.FLASHPAY_FC_PATH ? 1 : defaultRuns,
    verbose: 1,
    // Shrinking replays whole runs against the real stack: bounded so a failure is still reported in time.
    endOnFailure: env.FLASHPAY_FC_SHRINK !== '1',
  };
  if (env.FLASHPAY_FC_SEED) params.seed = Number(env.FLASHPAY_FC_SEED);
  if (env.FLASHPAY_FC_PATH) params.path = env.FLASHPAY_FC_PATH;
  return params;
}
