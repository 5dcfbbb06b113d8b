import type { ProviderName } from '../../platform/provider.config.ts';
import { SpanKind, tracingOn, withSpan, type Span } from '../../platform/tracing.ts';
import type { ChannelClient } from '../channel.client.ts';

// Each call to a provider is a CLIENT span of whatever runs it (a pay's request, a recovery pass),
// named by the call and carrying the provider and the order, never the amount's card or secret.
// The adapter's HTTP call sends the span's `traceparent` (platform/http.client.ts), so the provider
// double continues the trace. Only while tracing is on: off, the adapter is used as it is.

type Answer = { kind: string };

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
      const answer = await call();
      span?.setAttribute('flashpay.provider.answer', answer.kind);
      return answer;
    },
  );
}

export function traced(provider: ProviderName, client: ChannelClient): ChannelClient {
  if (!tracingOn()) return client;
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
