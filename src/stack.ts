import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { AppDeps } from './app.deps.ts';
import { createPgLedger, startChannel, type RunningChannel } from './channel/index.ts';
import { startEventPipeline, type EventPipeline } from './events/index.ts';
import { tokenSigner, type TokenSigner } from './platform/auth.ts';
import { loadSecrets } from './platform/secrets.ts';
import { systemClock } from './platform/clock.ts';
import { notifyUrlFor, tokenOptions, type Config } from './platform/config.ts';
import { createPool } from './platform/db.ts';
import { closeGracefully } from './platform/http.ts';
import { migrateOnStart } from './platform/migrate.ts';
import { clearRuntime, openDatabase, writeRuntime } from './runtime.ts';
import { startWorkers } from './workers.ts';
import { startProviderDoubles } from './provider-doubles.ts';
import { providersInUse } from './platform/provider.config.ts';

export interface StackOptions {
  config: Config;
  port: number;
  channelPort: number;
  control: boolean;
  workers: boolean;
  /** Written to .flashpay/runtime.json so `reconcile`/`recover` find this stack; off for throwaway stacks. */
  advertise: boolean;
  log: (line: string) => void;
}

export interface RunningStack {
  api: string;
  channel: string;
  deps: AppDeps;
  signer: TokenSigner;
  stop(): Promise<void>;
}

function urlOf(app: FastifyInstance): string {
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

/**
 * The whole stack in one process: database (external or embedded), migrations, the fake channel
 * with its durable ledger in a database of its own, the API, the outbox pipeline and the loops.
 */
export async function launchStack(options: StackOptions): Promise<RunningStack> {
  const { config, log } = options;
  // Production refuses what only development may use, before anything is started.
  if (config.production && !config.channelUrl && providersInUse(config.providers).includes('fake'))
    throw new Error(
      'production needs FLASHPAY_CHANNEL_URL: the built-in provider double is for development and tests only',
    );
  const database = await openDatabase(config, log);
  // Migrations hold a session advisory lock: behind PgBouncer they go to the database directly.
  // FLASHPAY_MIGRATE_ON_START=0 leaves the schema to `flashpay migrate` (rolling deploys, docs/deploy.md).
  await migrateOnStart(config.directDatabaseUrl ?? database.url);
  const secrets = await loadSecrets(config);
  if (secrets.generated.length > 0)
    log(`using development secrets kept under ${config.dataDir} (set ${secrets.generated.join(', ')} in production)`);

  const pool = createPool(database.url, config.poolSize, config.dbConnectTimeoutMs);
  // The provider double needs few connections; never more than the service's own pool.
  const channelPool = createPool(database.channelUrl, Math.min(10, config.poolSize), config.dbConnectTimeoutMs);
  let channel: RunningChannel | undefined;
  if (!config.channelUrl) {
    channel = await startChannel({
      store: await createPgLedger(channelPool),
      notifySecret: secrets.notify,
      control: options.control,
      controlToken: config.controlToken,
      notifyHosts: config.channelNotifyHosts,
      host: config.channelHost,
      port: options.channelPort,
      log,
    });
  }
  // A real provider without its address or credentials, in development: its double, in process.
  const doubles = await startProviderDoubles(config, log);
  const signer = tokenSigner(secrets.jwt, tokenOptions(config));
  const deps: AppDeps = {
    db: pool,
    clock: systemClock,
    config,
    signer,
    notifySecret: secrets.notify,
    eventsSecret: secrets.events,
    channelUrl: config.channelUrl ?? channel?.url ?? '',
    notifyUrl: '',
  };
  const app = await buildApp(deps);
  await app.listen({ host: config.host, port: options.port });
  const api = urlOf(app);
  deps.notifyUrl = notifyUrlFor(config, api);
  await doubles.connect(deps.notifyUrl);
  const events: EventPipeline = await startEventPipeline(config, {
    db: pool,
    runRelayLoop: options.workers,
    // LISTEN needs a session: behind PgBouncer only on the direct URL, else the relay only polls.
    listenUrl: config.directDatabaseUrl ?? (config.pgbouncer ? null : undefined),
    webhookUrl: `${api}/v1/fulfillment/events`,
    batchWebhookUrl: `${api}/v1/fulfillment/events/batch`,
    secret: secrets.events,
    onError: (error) => log(`outbox: ${(error as Error).message}`),
  });
  deps.relay = events.relay;
  const loops = options.workers ? startWorkers(deps, log) : [];
  // What scripts the provider (the sim, `flashpay trigger`): the double of the default provider when one runs here.
  const controlled = doubles.urlOf(config.providers.provider) ?? deps.channelUrl;
  if (options.advertise)
    await writeRuntime(config, { pid: process.pid, databaseUrl: database.url, api, channel: controlled });

  return {
    api,
    channel: controlled,
    deps,
    signer,
    // Graceful: stop accepting and let requests in flight answer (bounded), while the loops finish
    // their pass; only then the provider double (in-flight pays are calling it) and the pool.
    async stop() {
      const loopsStopped = Promise.all(loops.map((loop) => loop.stop()));
      if (!(await closeGracefully(app, config.shutdownGraceMs)))
        log(`requests still in flight after ${config.shutdownGraceMs} ms were cut`);
      await loopsStopped;
      await events.stop();
      await channel?.close();
      await doubles.close();
      await pool.end();
      await channelPool.end();
      if (options.advertise) await clearRuntime(config);
      await database.embedded?.stop();
    },
  };
}
