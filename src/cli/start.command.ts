import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.ts';
import type { AppDeps } from '../app.deps.ts';
import { createPgLedger, startChannel, type RunningChannel } from '../channel/index.ts';
import { loadSecret, tokenSigner } from '../platform/auth.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createPool } from '../platform/db.ts';
import { migrate } from '../platform/migrate.ts';
import { startEventPipeline, type EventPipeline } from '../outbox/index.ts';
import { clearRuntime, openDatabase, writeRuntime } from '../runtime.ts';
import { startWorkers } from '../workers.ts';
import { intFlag, parseArgs, stringFlag } from './args.ts';

const log = (line: string) => process.stderr.write(`flashpay: ${line}\n`);

function urlOf(app: FastifyInstance): string {
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

/** `flashpay start`: the whole stack in one process. */
export async function startCommand(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['no-workers', 'control']);
  const config = loadConfig();
  const port = intFlag(args, 'port', config.port);
  const channelPort = args.flags.has('channel-port') ? intFlag(args, 'channel-port', config.channelPort) : port === 0 ? 0 : config.channelPort;
  const database = await openDatabase(config, log);
  await migrate(database.url);
  const jwt = await loadSecret(config.jwtSecret, config.dataDir, 'jwt');
  const notify = await loadSecret(config.notifySecret, config.dataDir, 'notify');
  if (jwt.generated || notify.generated) log(`using development secrets kept under ${config.dataDir} (set FLASHPAY_JWT_SECRET and FLASHPAY_NOTIFY_SECRET in production)`);

  const pool = createPool(database.url, config.poolSize);
  const channelPool = createPool(database.channelUrl, 10);
  let channel: RunningChannel | undefined;
  if (!config.channelUrl) {
    channel = await startChannel({ store: await createPgLedger(channelPool), notifySecret: notify.secret, control: args.flags.has('control'), host: config.host, port: channelPort, log });
  }
  const deps: AppDeps = {
    db: pool,
    clock: systemClock,
    config,
    signer: tokenSigner(jwt.secret),
    notifySecret: notify.secret,
    channelUrl: config.channelUrl ?? channel?.url ?? '',
    notifyUrl: '',
  };
  const app = await buildApp(deps);
  await app.listen({ host: config.host, port });
  const api = urlOf(app);
  deps.notifyUrl = stringFlag(args, 'notify-url') ?? `${api}/v1/payment-notifications`;
  const noWorkers = args.flags.has('no-workers');
  const events: EventPipeline = await startEventPipeline(config, {
    db: pool,
    runRelayLoop: !noWorkers,
    webhookUrl: `${api}/v1/fulfillment/events`,
    secret: notify.secret,
    onError: (error) => log(`outbox: ${(error as Error).message}`),
  });
  deps.relay = events.relay;
  const loops = noWorkers ? [] : startWorkers(deps, log);
  await writeRuntime(config, { pid: process.pid, databaseUrl: database.url, api, channel: deps.channelUrl });

  if (port === 0) process.stdout.write(`${JSON.stringify({ api, channel: deps.channelUrl })}\n`);
  else process.stdout.write(`flashpay API      ${api}  (OpenAPI at ${api}/docs)\nflashpay channel  ${deps.channelUrl}\n`);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    log('stopping');
    await Promise.all(loops.map((loop) => loop.stop()));
    await events.stop();
    await app.close();
    await channel?.close();
    await pool.end();
    await channelPool.end();
    await clearRuntime(config);
    await database.embedded?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
