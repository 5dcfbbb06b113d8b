import type { TokenSigner } from './platform/auth.ts';
import type { Clock } from './platform/clock.ts';
import type { Config } from './platform/config.ts';
import type { Db } from './platform/db.ts';
import { longestPayTimeoutMs } from './platform/provider.config.ts';
import type { KeyedDeps } from './idempotency/index.ts';
import type { Relay } from './outbox/index.ts';

/** Everything a route needs, built once by the process that serves it. */
export interface AppDeps {
  db: Db;
  clock: Clock;
  config: Config;
  signer: TokenSigner;
  /** Verifies the provider's payment notifications (shared with the provider). */
  notifySecret: string;
  /** Verifies internal event deliveries to the fulfilment webhook (shared with our relay only). */
  eventsSecret: string;
  /** Base URL of the payment channel the service charges through. */
  channelUrl: string;
  /** Where the channel should send notifications about our charges. */
  notifyUrl: string;
  /** The outbox relay the admin drain and recovery use; absent where no events are delivered. */
  relay?: Relay;
}

export function keyedDeps(deps: AppDeps): KeyedDeps {
  // The lease outlives any honest owner: the pay call is bounded by its timeout.
  return {
    db: deps.db,
    clock: deps.clock,
    waitMs: deps.config.idempotencyWaitMs,
    leaseMs: Math.max(30_000, longestPayTimeoutMs(deps.config) * 10),
  };
}
