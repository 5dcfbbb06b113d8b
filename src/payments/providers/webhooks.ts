import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../app.deps.ts';
import type { PaymentDeps } from '../payments.deps.ts';
import { stripeWebhookRoutes } from './stripe.webhook.ts';
import { alipayNotifyRoutes } from './alipay.notify.ts';

// Each real provider notifies in its own words at its own route (issue 37): Stripe's webhooks at
// /v1/providers/stripe/webhook, Alipay's async notify at /v1/providers/alipay/notify. Every route
// verifies the provider's signature first, then turns the notification into the fake channel's
// NotificationRecord and hands it to handleNotification: deduplicated by the provider's event id,
// applied through the decider like every other answer. The routes are always there and documented;
// for a provider no tenant uses they answer 404 PROVIDER_NOT_CONFIGURED.

type WebhookModule = (app: FastifyInstance, deps: AppDeps, payments: PaymentDeps) => void;

const WEBHOOKS: WebhookModule[] = [stripeWebhookRoutes, alipayNotifyRoutes];

export function providerWebhookRoutes(app: FastifyInstance, deps: AppDeps, payments: PaymentDeps): void {
  for (const register of WEBHOOKS) register(app, deps, payments);
}
