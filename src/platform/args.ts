/** A tiny argv parser: `--name value`, `--name=value` and boolean `--flag`. */
export interface Args {
  flags: Map<string, string | true>;
  positional: string[];
}

export function parseArgs(argv: string[], booleans: readonly string[] = []): Args {
  const flags = new Map<string, string | true>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [name = '', inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (inline !== undefined) flags.set(name, inline);
    else if (booleans.includes(name) || i + 1 >= argv.length || (argv[i + 1] ?? '').startsWith('--'))
      flags.set(name, true);
    else flags.set(name, argv[++i] ?? '');
  }
  return { flags, positional };
}

export function stringFlag(args: Args, name: string): string | undefined {
  const value = args.flags.get(name);
  return typeof value === 'string' ? value : undefined;
}

export function intFlag(args: Args, name: string, fallback: number): number {
  const raw = stringFlag(args, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw new UsageError(`--${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

export class UsageError extends Error {}

/**
 * A usage error (exit 2) for a flag the command does not know or a stray argument, before the
 * command acts: a misspelt `--stale-after-ms` must not run a pass with the default instead.
 */
export function refuseUnknownFlags(command: string, args: Args, known: readonly string[]): void {
  const unknown = [...args.flags.keys()].filter((name) => !known.includes(name)).map((name) => `--${name}`);
  const stray = [...unknown, ...args.positional];
  if (stray.length > 0)
    throw new UsageError(`flashpay ${command}: unexpected ${stray.join(' ')} (flashpay ${command} --help)`);
}
