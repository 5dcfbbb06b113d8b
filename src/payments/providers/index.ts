import type { Config } from '../../platform/config.ts';
import type { Db } from '../../platform/db.ts';
import {
  payTimeoutOf,
  providerOfTenant,
  providersWithAdapters,
  PROVIDERS,
  type ProviderName,
  type StatusSync,
} from '../../platform/provider.config.ts';
import { channelClient, type ChannelClient } from '../channel.client.ts';
import { tenantRouter } from './routing.ts';
import { stripeClient } from './stripe.ts';
import { alipayClient } from './alipay.ts';
import { traced } from './traced.ts';

// The provider port (issue 37): the payment code speaks to a ChannelClient and nothing else. The
// fake channel is one adapter; Stripe and Alipay are others, each through its official SDK. Which
// one a tenant pays through is configuration (FLASHPAY_PROVIDER, FLASHPAY_PROVIDER_TENANTS). Each
// adapter's calls are bounded by its own provider's timeout (payTimeoutOf, provider.config.ts).

export type { ProviderName } from '../../platform/provider.config.ts';

type Adapter = (config: Config, channelUrl: string) => ChannelClient;

const ADAPTERS: Partial<Record<ProviderName, Adapter>> = {
  fake: (config, channelUrl) => channelClient(channelUrl, payTimeoutOf(config, 'fake')),
  stripe: (config) => stripeClient(config.providers.stripe, payTimeoutOf(config, 'stripe')),
  alipay: (config) => alipayClient(config.providers.alipay, payTimeoutOf(config, 'alipay')),
};

function adapterFor(name: ProviderName): Adapter {
  const adapter = ADAPTERS[name];
  if (!adapter) throw new Error(`FLASHPAY_PROVIDER=${name}: no adapter for it in this build`);
  return adapter;
}

export interface ProviderDeps {
  config: Config;
  /** The fake channel's URL (FLASHPAY_CHANNEL_URL or the built-in one). */
  channelUrl: string;
  /** Reads an order's tenant when tenants pay through different providers. */
  db: Db;
}

/**
 * The provider every payment call goes to: a router that sends each order's calls to the provider
 * its payment was recorded at (issue 48), else its tenant's. Adapters are built for every provider
 * some tenant uses, and for Stripe and Alipay whenever their credentials are set: a tenant that
 * moved away from one keeps its earlier orders queried, refunded and reconciled there.
 */
export function providerClient(deps: ProviderDeps): ChannelClient {
  const { providers } = deps.config;
  const names = providersWithAdapters(providers);
  const clients = new Map(names.map((name) => [name, traced(name, adapterFor(name)(deps.config, deps.channelUrl))]));
  return tenantRouter(deps.db, clients, (tenant) => providerOfTenant(providers, tenant));
}

const built = new WeakMap<ProviderDeps, ChannelClient>();

/** The provider of one running stack, built once (an SDK client keeps its connections). */
export function providerFor(deps: ProviderDeps): ChannelClient {
  let client = built.get(deps);
  if (!client) {
    client = providerClient(deps);
    built.set(deps, client);
  }
  return client;
}

/**
 * The status-sync schedule of the provider an order's payment is at: the one its pay recorded
 * (issue 48), else its tenant's (recovery.service.ts).
 */
export function statusSyncOf(config: Config): (tenantId: string, recordedProvider?: string | null) => StatusSync {
  const { providers } = config;
  return (tenantId, recordedProvider) =>
    providers.statusSync[isProviderName(recordedProvider) ? recordedProvider : providerOfTenant(providers, tenantId)];
}

function isProviderName(name: string | null | undefined): name is ProviderName {
  return (PROVIDERS as readonly string[]).includes(name ?? '');
}
