import type { AppDeps } from '../app.deps.ts';
import { payTimeoutOf } from '../platform/provider.config.ts';
import { providerFor } from '../payments/index.ts';
import { fulfilmentClient, type SagaDeps } from '../saga/index.ts';

/** The saga's providers as `start` wires them: the payment channel, and the fulfilment provider (the channel's fake one unless configured). */
export function sagaDeps(deps: AppDeps): SagaDeps {
  // The fulfilment provider is the fake channel's double unless configured: its timeout.
  const timeoutMs = payTimeoutOf(deps.config, 'fake');
  return {
    db: deps.db,
    clock: deps.clock,
    provider: providerFor(deps),
    fulfilment: fulfilmentClient(deps.config.fulfilmentUrl ?? deps.channelUrl, timeoutMs),
    deadlineMs: deps.config.compensationDeadlineMs,
  };
}
