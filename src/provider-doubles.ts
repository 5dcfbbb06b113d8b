import type { Config } from './platform/config.ts';
import { providersInUse } from './platform/provider.config.ts';
import { webhookUrl } from './payments/index.ts';
import {
  developmentDouble,
  startChannel,
  type DevelopmentDouble,
  type DoubleName,
  type RunningChannel,
} from './channel/index.ts';

interface ProviderDoubles {
  /** The double of `name`, when this process runs one (the sim and `flashpay trigger` script it). */
  urlOf(name: string): string | undefined;
  /** Registers flashpay's webhook with each double once flashpay listens (its notify URL known). */
  connect(notifyUrl: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The double of `name` on a channel of its own, as `flashpay start` and `flashpay double` run it:
 * its development credentials (developmentDouble) and the channel options every double shares.
 */
export async function startDevelopmentDouble(
  name: DoubleName,
  config: Config,
  listen: { control: boolean; host: string; port: number; log: (line: string) => void },
): Promise<{ double: DevelopmentDouble; channel: RunningChannel }> {
  const double = await developmentDouble(name, config.dataDir);
  const channel = await startChannel({
    // The dialect signs its notifications its provider's way: the fake channel's secret goes unused.
    notifySecret: 'unused-by-provider-doubles-their-dialect-signs',
    dialect: double.dialect,
    // A provider's form bodies may be larger than the fake channel's JSON.
    bodyLimitBytes: 64 * 1024,
    controlToken: config.controlToken,
    notifyHosts: config.channelNotifyHosts,
    ...listen,
  });
  return { double, channel };
}

/** A provider is pointed nowhere: no address and no credentials of a real account. */
function unaddressed(config: Config, name: DoubleName): boolean {
  const { stripe, alipay } = config.providers;
  return name === 'stripe' ? !stripe.apiBase && !stripe.secretKey : !alipay.gateway && !alipay.appId;
}

/**
 * `flashpay start` with FLASHPAY_PROVIDER=stripe|alipay and neither the provider's address nor an
 * account's credentials: the provider's double runs in this process (development only; production
 * refuses), and the config points the adapter at it. Its ledger is in memory: a restart forgets it.
 */
export async function startProviderDoubles(config: Config, log: (line: string) => void): Promise<ProviderDoubles> {
  const started: Array<{ name: DoubleName; double: DevelopmentDouble; channel: RunningChannel }> = [];
  for (const name of providersInUse(config.providers)) {
    if (name === 'fake' || !unaddressed(config, name)) continue;
    if (config.production)
      throw new Error(`production needs ${name === 'stripe' ? 'STRIPE_SECRET_KEY' : 'ALIPAY_APP_ID and its keys'}`);
    const { double, channel } = await startDevelopmentDouble(name, config, {
      control: true,
      host: config.channelHost,
      port: 0,
      log,
    });
    const env = double.env(channel.url);
    if (name === 'stripe')
      config.providers.stripe = {
        ...config.providers.stripe,
        apiBase: env.STRIPE_API_BASE,
        secretKey: env.STRIPE_SECRET_KEY,
        webhookSecret: env.STRIPE_WEBHOOK_SECRET,
      };
    else
      config.providers.alipay = {
        ...config.providers.alipay,
        gateway: env.ALIPAY_GATEWAY,
        appId: env.ALIPAY_APP_ID,
        privateKey: env.ALIPAY_PRIVATE_KEY,
        publicKey: env.ALIPAY_PUBLIC_KEY,
      };
    log(`${name} double (development) listening on ${channel.url}`);
    started.push({ name, double, channel });
  }
  return {
    urlOf: (name) => started.find((s) => s.name === name)?.channel.url,
    async connect(notifyUrl) {
      for (const { name, double, channel } of started) await double.connect?.(channel.url, webhookUrl(notifyUrl, name));
    },
    async close() {
      for (const { channel } of started) await channel.close();
    },
  };
}
