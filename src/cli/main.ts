import { UsageError } from '../platform/args.ts';
import { startTracing } from '../platform/tracing.ts';

type Command = (argv: string[]) => Promise<void>;

// Loaded lazily so `flashpay token` does not pay for importing the whole server.
const COMMANDS: Record<string, () => Promise<Command>> = {
  start: async () => (await import('./start.command.ts')).startCommand,
  channel: async () => (await import('./channel.command.ts')).channelCommand,
  double: async () => (await import('./double.command.ts')).doubleCommand,
  stock: async () => (await import('./stock.command.ts')).stockCommand,
  // The contract's name for `flashpay stock` (docs/queued-orders.md); kept working.
  inventory: async () => (await import('./stock.command.ts')).stockCommand,
  token: async () => (await import('./token.command.ts')).tokenCommand,
  migrate: async () => (await import('./migrate.command.ts')).migrateCommand,
  reconcile: async () => (await import('./reconcile.command.ts')).reconcileCommand,
  recover: async () => (await import('./recover.command.ts')).recoverCommand,
  sim: async () => (await import('./sim.command.ts')).simCommand,
  bench: async () => (await import('./bench.command.ts')).benchCommand,
  cluster: async () => (await import('./cluster.command.ts')).clusterCommand,
  embedded: async () => (await import('./embedded.command.ts')).embeddedCommand,
  listen: async () => (await import('./listen.command.ts')).listenCommand,
  trigger: async () => (await import('./trigger.command.ts')).triggerCommand,
};

const USAGE = `usage: flashpay <command> [options]
  start [--port 8080] [--channel-port 8081] [--role all|api|worker] [--no-workers] [--control] [--production]
  channel [--port 8081] [--control]
  double stripe|alipay [--port P] [--control] [--webhook URL] [--env]
  stock [--port 8082] [--database-url URL]
  inventory [--port 8082] [--database-url URL]
  token --tenant T --user U [--admin | --operator] [--ttl 3600] [--console [--url URL]]
  migrate
  reconcile [--json] [--full | --incremental] [--stock-database-url URL]
  recover [--stale-after-ms N] [--json]
  sim --seed N [--orders 24] [--stock 24] [--late 12] [--mix …] [--api URL --channel URL] [--tenant acme] [--json]
  bench [--quick] [--json]
  cluster up|status|kill NAME|start NAME|down [--dir D] [--api 2] [--nats 3] [--json]
  embedded list|prune [--legacy] [--json] [--root /var/lib/flashpay]
  listen [--forward-to URL] [--events ORDER_PAID,…] [--json]
  trigger charged|declined|refunded|duplicate-callback|late-callback|lost-reply --order ID [--tenant acme] [--api URL --channel URL] [--json]
`;

const HELP_FLAGS = ['--help', '-h'];

/** What a command's help says beyond its line of USAGE: every flag and an example. */
const DETAILS: Record<string, string> = {
  embedded: `
As root, an embedded PostgreSQL whose folder the postgres user cannot reach lives in
/var/lib/flashpay/<hash>/pg instead; origin.json beside it names the folder, <folder>.moved-to
points back. \`flashpay start\` (and the tests, the bench) remove orphans on their own.
  list              every moved cluster: state, size, directory, origin. States: running (a
                    postgres process in it: never removed), in use (its origin is there),
                    orphaned (origin gone, nothing running), unknown origin (moved before
                    origins were recorded: only prune --legacy removes it)
  prune             removes orphaned clusters; prints each and a total
  --legacy          prune also removes clusters of unknown origin idle for an hour or more
  --json            machine-readable output
  --root DIR        where moved clusters live (default /var/lib/flashpay)
example: flashpay embedded prune --legacy
`,
};

/** The command's line of USAGE (every command has one), and its details if it has them. */
function usageOf(name: string): string {
  const line = USAGE.split('\n').find((l) => l.trimStart().split(' ')[0] === name);
  return `usage: flashpay ${line?.trim() ?? name}\n${DETAILS[name] ?? ''}`;
}

async function main(): Promise<void> {
  const [name, ...rest] = process.argv.slice(2);
  const load = name ? COMMANDS[name] : undefined;
  if (!load) {
    const asked = name === undefined || name === 'help' || HELP_FLAGS.includes(name);
    (asked ? process.stdout : process.stderr).write(USAGE);
    process.exit(asked ? 0 : 2);
  }
  // Asking for help acts on nothing: answered here, before the command is even loaded, so no
  // command can migrate, recover or start because it did not know the flag (CONTRACT.md, "Command
  // line habits"; issue 40).
  if (rest.some((arg) => HELP_FLAGS.includes(arg))) {
    process.stdout.write(usageOf(name!));
    return;
  }
  // Before the command builds anything: its servers and pools hook spans only when tracing is on
  // (OpenTelemetry's variables, docs/observability.md); unset, the SDK is never loaded.
  await startTracing();
  await (
    await load()
  )(rest);
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  // Conditions a person can fix get one line; anything else is a bug and gets its stack.
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e.code === 'EADDRINUSE')
    process.stderr.write(
      `flashpay: ${e.address ?? ''}:${e.port ?? ''} is in use; choose another with --port / --channel-port (or FLASHPAY_PORT)\n`,
    );
  else if (e.code === 'ECONNREFUSED')
    process.stderr.write(`flashpay: cannot connect (${e.message}); is the database or the stack running?\n`);
  else process.stderr.write(`flashpay: ${e.stack ?? String(error)}\n`);
  process.exit(1);
});
