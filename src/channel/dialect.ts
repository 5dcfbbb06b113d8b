import type { FastifyInstance } from 'fastify';
import type { ChannelDeps } from './channel.routes.ts';
import type { OutgoingNotification, WireNotification } from './wire.ts';

// A provider double (issue 37) is the fake channel's ledger, faults and notifier behind another
// provider's wire format: Stripe's API and webhooks, Alipay's gateway and async notify. The ledger's
// rules, the fault book and the `/_control` API are shared; only the words on the wire differ.

export interface Dialect {
  /** `stripe`, `alipay`: shown in the double's `/_control/requests` and its logs. */
  name: string;
  /** The provider's API routes, each through `perform` so the fault book applies as on the fake channel. */
  register(app: FastifyInstance, deps: ChannelDeps): void;
  /** The provider's notification for a ledger change, signed its way. */
  notification(n: OutgoingNotification): WireNotification;
  /** Forgets what the dialect keeps beside the ledger (`/_control/reset`), so a reset double starts clean. */
  reset?(): void;
}

export type { OutgoingNotification, WireNotification } from './wire.ts';
