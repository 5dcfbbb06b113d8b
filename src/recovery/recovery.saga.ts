import type { AppDeps } from '../app.deps.ts';
import { providerFor } from '../payments/index.ts';
import { fulfilmentClient, type SagaDeps } from '../saga/index.ts';

/** The saga's providers as `start` wires them: the payment channel, and the fulfilment provider (the channel's fake one unless configured). */
export function sagaDeps(deps: AppDeps): SagaDeps {
  const timeoutMs = deps.config.payTimeoutMs;
  return {
    db: deps.db,
    clock: deps.clock,
    provider: providerFor(deps),
    fulfilment: fulfilmentClient(deps.config.fulfilmentUrl ?? deps.channelUrl, timeoutMs),
    deadlineMs: deps.config.compensationDeadlineMs,
  };
}
