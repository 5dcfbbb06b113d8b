import { Counter } from 'prom-client';
import { businessRegistry } from '../../platform/business-metrics.ts';
import type { ProviderName } from '../../platform/provider.config.ts';
import { SpanKind, tracingOn, withSpan, type Span } from '../../platform/tracing.ts';
import type { ChannelClient } from '../channel.client.ts';

// Every call to a provider is counted by its answer (the alert on each provider's error rate,
// deploy/prometheus/): UNKNOWN is a call whose answer we did not get (timeout, 5xx, a cut
// connection). While tracing is on, each call is also a CLIENT span of whatever runs it (a pay's request, a recovery pass),
// named by the call and carrying the provider and the order, never the amount's card or secret.
// The adapter's HTTP call sends the span's `traceparent` (platform/http.client.ts), so the provider
// double continues the trace. Only while tracing is on: off, the adapter is used as it is.

type Answer = { kind: string };

const calls = new Counter({
  name: 'flashpay_provider_calls_total',
  help: 'Calls to a payment provider, by provider, operation and answer (UNKNOWN: no answer, a timeout or a 5xx)',
  labelNames: ['provider', 'operation', 'answer'],
  registers: [businessRegistry],
});

async function counted<T extends Answer>(
  provider: ProviderName,
  operation: string,
  call: () => Promise<T>,
): Promise<T> {
  const answer = await call();
  calls.inc({ provider, operation, answer: answer.kind });
  return answer;
}

function called<T extends Answer>(
  provider: ProviderName,
  operation: string,
  orderId: string | undefined,
  call: () => Promise<T>,
): Promise<T> {
  return withSpan(
    `provider ${operation}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'flashpay.provider': provider,
        'flashpay.provider.operation': operation,
        ...(orderId !== undefined ? { 'flashpay.order_id': orderId } : {}),
      },
    },
    async (span: Span | undefined) => {
      const answer = await counted(provider, operation, call);
      span?.setAttribute('flashpay.provider.answer', answer.kind);
      return answer;
    },
  );
}

// Each provider's series exist at 0 from the start: rate() cannot see the first increase of a
// series that appears with it (a burst of UNKNOWN answers within one scrape would read as none).
const OPERATIONS = ['charge', 'query', 'close', 'refund'] as const;
const ANSWERS = ['CHARGED', 'DECLINED', 'CLOSED', 'STATUS', 'REFUNDED', 'REFUSED', 'UNKNOWN'] as const;

export function traced(provider: ProviderName, client: ChannelClient): ChannelClient {
  for (const operation of OPERATIONS) for (const answer of ANSWERS) calls.inc({ provider, operation, answer }, 0);
  if (!tracingOn())
    return {
      ...bound(client),
      charge: (order, amount, notifyUrl, customer, paymentMethod) =>
        counted(provider, 'charge', () => client.charge(order, amount, notifyUrl, customer, paymentMethod)),
      query: (order) => counted(provider, 'query', () => client.query(order)),
      close: (order) => counted(provider, 'close', () => client.close(order)),
      refund: (order, key, amount) => counted(provider, 'refund', () => client.refund(order, key, amount)),
    };
  const statementAnswer = { kind: 'STATEMENT' };
  const tracedClient: ChannelClient = {
    charge: (order, amount, notifyUrl, customer, paymentMethod) =>
      called(provider, 'charge', order, () => client.charge(order, amount, notifyUrl, customer, paymentMethod)),
    query: (order) => called(provider, 'query', order, () => client.query(order)),
    close: (order) => called(provider, 'close', order, () => client.close(order)),
    refund: (order, key, amount) => called(provider, 'refund', order, () => client.refund(order, key, amount)),
    statement: async () =>
      (
        await called(provider, 'statement', undefined, async () => ({
          ...statementAnswer,
          value: await client.statement(),
        }))
      ).value,
  };
  if (client.statementPage) {
    const page = client.statementPage.bind(client);
    tracedClient.statementPage = async (after, limit) =>
      (
        await called(provider, 'statement page', undefined, async () => ({
          ...statementAnswer,
          value: await page(after, limit),
        }))
      ).value;
  }
  if (client.fulfilled) tracedClient.fulfilled = client.fulfilled.bind(client);
  return tracedClient;
}

/** The adapter's optional reads, bound to it (an SDK adapter keeps its state on itself). */
function bound(client: ChannelClient): ChannelClient {
  const out: ChannelClient = { ...client, statement: client.statement.bind(client) };
  if (client.statementPage) out.statementPage = client.statementPage.bind(client);
  if (client.fulfilled) out.fulfilled = client.fulfilled.bind(client);
  return out;
}
