import { helpOf, isUsageError } from '../platform/args.ts';
import { startTracing } from '../platform/tracing.ts';
import { SPECS, specOf } from './specs/index.ts';

type Command = (argv: string[]) => Promise<void>;

// Loaded lazily so `flashpay token` does not pay for importing the whole server.
const COMMANDS: Record<string, () => Promise<Command>> = {
  start: async () => (await import('./start.command.ts')).startCommand,
  channel: async () => (await import('./channel.command.ts')).channelCommand,
  double: async () => (await import('./double.command.ts')).doubleCommand,
  stock: async () => (await import('./stock.command.ts')).stockCommand,
  // The contract's name for `flashpay stock` (docs/queued-orders.md); kept working.
  inventory: async () => (await import('./stock.command.ts')).inventoryCommand,
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

const HELP_FLAGS = ['--help', '-h'];

/** `flashpay --help`: each command with the first line of its summary, from the same specs. */
function usage(): string {
  // Its first sentence: the summaries wrap at about 100 columns.
  const first = (summary: string) => summary.replace(/\n/g, ' ').split(/(?<=\.) /)[0] ?? '';
  const lines = Object.entries(SPECS).map(([name, spec]) => `  ${name.padEnd(11)}${first(spec.summary)}`);
  return `usage: flashpay <command> [options]   (flashpay <command> --help: its flags, environment, examples)\n${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const [name, ...rest] = process.argv.slice(2);
  const load = name ? COMMANDS[name] : undefined;
  if (!load) {
    const asked = name === undefined || name === 'help' || HELP_FLAGS.includes(name);
    (asked ? process.stdout : process.stderr).write(usage());
    process.exit(asked ? 0 : 2);
  }
  // Asking for help acts on nothing: answered here, before the command is even loaded, so no
  // command can migrate, recover or start because it did not know the flag (CONTRACT.md, "Command
  // line habits"; issue 40).
  if (rest.some((arg) => HELP_FLAGS.includes(arg))) {
    const spec = specOf(name!, rest);
    // Every command has a spec (HS-02 checks); a command added without one still answers, briefly.
    process.stdout.write(spec ? helpOf(spec) : `usage: flashpay ${name!} (no spec in src/cli/specs yet)\n`);
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
  if (isUsageError(error)) {
    process.stderr.write(error.message.endsWith('\n') ? error.message : `${error.message}\n`);
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
