import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { assertHttpUrl, type ChannelDeps } from '../channel.routes.ts';
import type { Dialect } from '../dialect.ts';
import { randomHex } from '../../platform/ids.ts';
import { registerBalanceTransactions } from './stripe.balance.ts';
import { formOf, registerStripeMoneyRoutes } from './stripe.routes.ts';
import { StripeDoubleState, type StripeDoubleOptions } from './stripe.state.ts';
import { listOf, parseForm, signedEvent, stripeError, stripeEvent } from './stripe.wire.ts';

// The Stripe double (issue 37): the fake channel's ledger, fault book and notifier speaking
// Stripe's API (form-encoded requests, Bearer keys, Idempotency-Key, Stripe-shaped objects and
// errors) and sending Stripe's signed webhook Events. The official `stripe` SDK talks to it
// unchanged once pointed at it (host/port/protocol).

export type { StripeDoubleOptions } from './stripe.state.ts';
export { stripeSignature, stripeEvent, paymentIntentId } from './stripe.wire.ts';

function sameSecret(expected: string, given: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(expected), digest(given));
}

function requireApiKey(apiKey: string) {
  return async (request: FastifyRequest, reply: import('fastify').FastifyReply) => {
    const match = /^Bearer +(\S+)$/i.exec(request.headers.authorization ?? '');
    if (match && sameSecret(apiKey, match[1]!)) return;
    // Stripe's answer to a missing or wrong key; the key given is never echoed.
    return reply.code(401).send(stripeError('invalid_request_error', 'Invalid API Key provided.'));
  };
}

function registerWebhookEndpoints(app: FastifyInstance, deps: ChannelDeps, state: StripeDoubleState): void {
  const describe = (e: { id: string; url: string; enabled_events: string[] }) => ({
    ...e,
    object: 'webhook_endpoint',
    status: 'enabled',
  });
  app.post('/v1/webhook_endpoints', async (request, reply) => {
    const form = formOf(request);
    const url = String(form.url ?? '');
    // The double must not become a way to POST anywhere: the fake channel's notify hosts apply.
    try {
      assertHttpUrl(url, 'url', deps.notifyHosts);
    } catch (error) {
      return reply.code(400).send(stripeError('invalid_request_error', (error as Error).message, { param: 'url' }));
    }
    const endpoint = { id: `we_${randomHex(12)}`, url, enabled_events: listOf(form.enabled_events) };
    state.endpoints.push(endpoint);
    // As at Stripe, the signing secret is shown once, in the answer to the creation.
    return { ...describe(endpoint), secret: state.options.webhookSecret };
  });
  app.get('/v1/webhook_endpoints', async () => ({
    object: 'list',
    url: '/v1/webhook_endpoints',
    has_more: false,
    data: state.endpoints.map(describe),
  }));
}

/**
 * Stripe's test-mode helpers (`/v1/test_helpers/…`) have none for this, so the double adds one: the
 * next PaymentIntent created for `order_id` asks for 3-D Secure (`requires_action`), as if the
 * buyer's card were pm_card_threeDSecure2Required. flashpay's pay names no payment method.
 */
function registerTestHelpers(app: FastifyInstance, state: StripeDoubleState): void {
  app.post('/v1/test_helpers/payment_intents/require_action', async (request, reply) => {
    const order = formOf(request).order_id;
    if (typeof order !== 'string' || order === '')
      return reply.code(400).send(stripeError('invalid_request_error', 'order_id is required', { param: 'order_id' }));
    state.requireAction.add(order);
    return { object: 'test_helper', order_id: order, requires_action: true };
  });
}

export function stripeDialect(options: StripeDoubleOptions): Dialect {
  const state = new StripeDoubleState(options);
  return {
    name: 'stripe',
    register(app, deps) {
      // An injected 500 answers as Stripe's api_error does.
      deps.errorBody = (message) => stripeError('api_error', message);
      // Its own scope: the form parser, the key check and Stripe-shaped errors belong to the
      // Stripe routes only, never to /_control.
      void app.register(async (api) => {
        api.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
          done(null, parseForm(body as string));
        });
        if (options.apiKey !== undefined) api.addHook('onRequest', requireApiKey(options.apiKey));
        api.setErrorHandler((error: FastifyError, _request, reply) => {
          const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 500;
          const type = status < 500 ? 'invalid_request_error' : 'api_error';
          return reply.code(status).send(stripeError(type, error.message));
        });
        registerStripeMoneyRoutes(api, deps, state);
        registerBalanceTransactions(api, deps, state);
        registerWebhookEndpoints(api, deps, state);
        registerTestHelpers(api, state);
      });
    },
    notification(n) {
      return signedEvent(stripeEvent(n, state.currency, options.webhookSecret), options.webhookSecret);
    },
    reset: () => state.reset(),
  };
}
