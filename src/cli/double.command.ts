import type { DoubleName } from '../channel/index.ts';
import { intFlag, parseCommand, stringFlag, usageError, UsageError } from '../platform/args.ts';
import { DOUBLE } from './specs/index.ts';
import { loadConfig } from '../platform/config.ts';
import { startDevelopmentDouble } from '../provider-doubles.ts';
import { untilSignal } from './signals.ts';

const NAMES: readonly DoubleName[] = ['stripe', 'alipay'];

/**
 * `flashpay double stripe|alipay`: a local double of a real provider, speaking its wire format
 * (issue 37), with the fake channel's ledger and, with `--control`, its `/_control` API. Prints one
 * JSON line, `{"url": URL}`; with `--env`, also the variables that point flashpay at it
 * (development credentials, made per installation under FLASHPAY_DATA_DIR).
 */
export async function doubleCommand(argv: string[]): Promise<void> {
  const args = parseCommand(DOUBLE, argv);
  const [name] = args.positional;
  if (!NAMES.includes(name as DoubleName)) throw usageError(DOUBLE, 'which provider? stripe or alipay');
  const config = loadConfig();
  if (config.production) throw new UsageError('a provider double is for development and tests, not production');
  const { double, channel } = await startDevelopmentDouble(name as DoubleName, config, {
    control: args.flags.has('control'),
    host: stringFlag(args, 'host') ?? config.channelHost,
    port: intFlag(args, 'port', 0),
    log: (message) => console.error(message),
  });
  const webhook = stringFlag(args, 'webhook');
  if (webhook !== undefined) {
    if (!double.connect) throw new UsageError('--webhook is Stripe’s: Alipay takes notify_url with each payment');
    await double.connect(channel.url, webhook);
  }
  console.log(JSON.stringify({ url: channel.url, ...(args.flags.has('env') ? { env: double.env(channel.url) } : {}) }));
  await untilSignal();
  await channel.close();
}
