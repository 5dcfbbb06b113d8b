// Production defaults of a relay, each with its reason. Tests pass much smaller values.
export const RELAY_DEFAULTS = {
  /** Seed 004: a claim older than 30 s is considered abandoned and taken over. */
  leaseMs: 30_000,
  /** Rows one claim locks; small enough that a pass finishes well inside the lease. */
  batchSize: 50,
  /** ~12 attempts with 0.5 s base and 60 s cap span roughly 5–10 minutes before an event is parked. */
  maxAttempts: 12,
  backoffBaseMs: 500,
  backoffMaxMs: 60_000,
} as const;
