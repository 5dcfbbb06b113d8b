import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config.ts';
import { stripeClient } from '../../src/payments/providers/stripe.ts';

// What Stripe answers while a request with the same Idempotency-Key is still being processed:
// 409 idempotency_key_in_use. The double never answers it (it serves one request at a time), so
// this server stands in for Stripe's API on the calls a refund makes. The SDK maps a 409 to
// StripeAPIError, which the adapter reads as unanswered: this pins that a refund in flight is never
// recorded as refused (a person would be asked to look at a refund that is happening).
const PI = {
  id: 'pi_rf9',
  object: 'payment_intent',
  status: 'succeeded',
  amount: 1990,
  metadata: { order_id: 'o_rf9' },
};

describe('a Stripe refund whose key is still in flight', () => {
  let server: http.Server;
  let base = '';
  let refundAnswer = { status: 409, body: {} as unknown };
  beforeAll(async () => {
    server = http.createServer((request, response) => {
      const reply = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (request.url?.startsWith('/v1/payment_intents/search'))
        return reply(200, { object: 'search_result', data: [PI] });
      if (request.url === '/v1/refunds') return reply(refundAnswer.status, refundAnswer.body);
      reply(404, { error: { type: 'invalid_request_error', message: 'no such route' } });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => new Promise((resolve) => server.close(resolve)));

  const adapter = () =>
    stripeClient({ ...loadConfig({}).providers.stripe, secretKey: 'sk_test_x', apiBase: base }, 5_000);

  it('ST-10 409 idempotency_key_in_use is UNKNOWN (the refund may happen; the retry asks again), another refusal is REFUSED', async () => {
    refundAnswer = {
      status: 409,
      body: { error: { type: 'idempotency_error', code: 'idempotency_key_in_use', message: 'in use' } },
    };
    expect(await adapter().refund('o_rf9', 'rf-o_rf9', 1990)).toMatchObject({ kind: 'UNKNOWN' });
    // The control: a refusal that is final (an amount the charge does not have) stays REFUSED.
    refundAnswer = {
      status: 400,
      body: {
        error: { type: 'invalid_request_error', code: 'parameter_invalid', message: 'Refund amount is too large' },
      },
    };
    expect(await adapter().refund('o_rf9', 'rf-o_rf9', 1990)).toMatchObject({
      kind: 'REFUSED',
      status: 400,
      detail: 'Refund amount is too large (parameter_invalid)',
    });
    // Issue 48: the charge refunded in full already (in Stripe's dashboard): the money is back, REFUNDED.
    refundAnswer = {
      status: 400,
      body: { error: { type: 'invalid_request_error', code: 'charge_already_refunded', message: 'refunded' } },
    };
    expect(await adapter().refund('o_rf9', 'rf-o_rf9', 1990)).toMatchObject({ kind: 'REFUNDED', already: true });
  });
});
