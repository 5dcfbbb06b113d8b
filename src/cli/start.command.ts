import { loadConfig } from '../platform/config.ts';
import { providersBanner } from '../platform/provider.config.ts';
import { isDatabaseFault } from '../platform/db.ts';
import { MigrationsPendingError } from '../platform/migrate.ts';
import { launchStack } from '../stack.ts';
import { stopTracing } from '../platform/tracing.ts';
import { intFlag, parseCommand, stringFlag, UsageError, type Args } from '../platform/args.ts';
import { START } from './specs/index.ts';

const log = (line: string) => process.stderr.write(`flashpay: ${line}\n`);

// Several processes on one database (docs/deploy.md): `api` serves requests and runs no timed loop;
// `worker` (the default, `all`) also runs the relay, recovery, expiry, saga and stock loops, which are
// safe to run in any number of processes at once.
const ROLES = ['all', 'api', 'worker'] as const;

function workersOf(args: Args): boolean {
  const role = stringFlag(args, 'role') ?? 'all';
  if (!(ROLES as readonly string[]).includes(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  return role !== 'api' && !args.flags.has('no-workers');
}

/** `flashpay start [--port 8080] [--channel-port 8081] [--role all|api|worker] [--no-workers] [--control] [--production]`: the whole stack in one process. */
export async function startCommand(argv: string[]): Promise<void> {
  const args = parseCommand(START, argv);
  const loaded = loadConfig();
  const config = { ...loaded, production: loaded.production || args.flags.has('production') };
  const port = intFlag(args, 'port', config.port);
  // --port 0 means "pick free ports": the channel follows unless given its own.
  const channelPort = args.flags.has('channel-port')
    ? intFlag(args, 'channel-port', config.channelPort)
    : port === 0
      ? 0
      : config.channelPort;
  const stack = await launchStack({
    config,
    port,
    channelPort,
    control: args.flags.has('control'),
    workers: workersOf(args),
    advertise: true,
    log,
  }).catch((error: unknown) => {
    // FLASHPAY_MIGRATE_ON_START=0 on a schema behind this release: the deploy skipped its step; say which.
    if (!(error instanceof MigrationsPendingError)) throw error;
    log(error.message);
    process.exit(1);
  });

  if (port === 0) process.stdout.write(`${JSON.stringify({ api: stack.api, channel: stack.channel })}\n`);
  else
    process.stdout.write(
      `flashpay API      ${stack.api}  (OpenAPI at ${stack.api}/docs)\nflashpay channel  ${stack.channel}\n` +
        `flashpay payments ${providersBanner(config.providers)}\n`,
    );

  let stopping = false;
  const stop = async () => {
    // A second signal while stopping: the operator wants out now.
    if (stopping) {
      log('second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log('stopping: no new requests; letting those in flight finish');
    await stack.stop();
    // The spans of the last requests are still buffered (OTEL_BSP_SCHEDULE_DELAY): export them.
    await stopTracing();
    process.exit(0);
  };
  // The last line of defence: a database error that escaped every listener (a connection killed
  // at an unlucky moment) is logged, never the end of the process. Anything else is a bug: exit.
  const fatalUnlessDatabase = (error: unknown) => {
    if (isDatabaseFault(error)) return log(`database error outside any request, ignored: ${(error as Error).message}`);
    log(`fatal: ${(error as Error | null)?.stack ?? String(error)}`);
    process.exit(1);
  };
  process.on('uncaughtException', fatalUnlessDatabase);
  process.on('unhandledRejection', fatalUnlessDatabase);
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
