import { loadSecret } from '../platform/auth.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig, notifyUrlFor, type Config } from '../platform/config.ts';
import { createPool, type Db } from '../platform/db.ts';
import { providerClient, statusSyncOf } from '../payments/index.ts';
import type { PaymentDeps } from '../payments/index.ts';
import { openDatabase, readRuntime } from '../runtime.ts';
import { UsageError } from '../platform/args.ts';

/** What an operator command (reconcile, recover) needs: the service's database and its provider. */
export interface Ops {
  config: Config;
  db: Db;
  payments: PaymentDeps;
  channelUrl: string;
  /** The running API, when there is one (its fulfillment webhook receives drained events). */
  apiUrl: string | undefined;
  notifySecret: string;
  /** Signs what `recover` drains to the fulfilment webhook. */
  eventsSecret: string;
  close(): Promise<void>;
}

/**
 * Finds the stack: DATABASE_URL and FLASHPAY_CHANNEL_URL when set, otherwise the `flashpay start`
 * running in this directory (its .flashpay/runtime.json).
 */
export async function connectOps(): Promise<Ops> {
  const config = loadConfig();
  const running = await readRuntime(config);
  const channelUrl = config.channelUrl ?? running?.channel;
  if (!channelUrl)
    throw new UsageError(
      'no payment channel: run `flashpay start` in this directory, or set FLASHPAY_CHANNEL_URL (and DATABASE_URL)',
    );
  const database = await openDatabase(config, (line) => process.stderr.write(`${line}\n`));
  const db = createPool(database.url, 10);
  const notify = await loadSecret(config.notifySecret, config.dataDir, 'notify');
  const events = await loadSecret(config.eventsSecret, config.dataDir, 'events');
  return {
    config,
    db,
    payments: {
      db,
      clock: systemClock,
      channel: providerClient({ config, channelUrl, db }),
      statusSync: statusSyncOf(config),
      providers: config.providers,
      notifyUrl: config.publicUrl || running ? notifyUrlFor(config, running?.api ?? '') : '',
    },
    apiUrl: running?.api,
    channelUrl,
    notifySecret: notify.secret,
    eventsSecret: events.secret,
    async close() {
      await db.end();
      await database.embedded?.stop();
    },
  };
}
