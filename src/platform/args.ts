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

export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * By name as well as by class: `flashpay bench` runs file by file beside the bundled bin (issue
 * 49), so its UsageError is another copy of the class, and instanceof alone missed it (exit 1 and a
 * stack for `bench --frob`; HS-03 found it).
 */
export function isUsageError(error: unknown): error is UsageError {
  return error instanceof UsageError || (error instanceof Error && error.name === 'UsageError');
}

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

/** One flag of a command: `value` names its argument (absent: a boolean switch). */
export interface FlagSpec {
  name: string;
  value?: string;
  description: string;
}

/**
 * A command's one source of truth: the parser accepts exactly its flags and its `--help` and its
 * usage error print the text made from it, so the three cannot drift apart (issue 52).
 */
export interface CommandSpec {
  /** As typed after `flashpay`: `sim`, `cluster up`. */
  name: string;
  /** What follows the name in the usage line: `WHAT [--order ID]`. */
  synopsis: string;
  /** What the command does, in a sentence or three. */
  summary: string;
  flags: readonly FlagSpec[];
  env: readonly { name: string; description: string }[];
  examples: readonly string[];
  /** Positional arguments the command takes (default none). */
  positional?: { min: number; max: number };
  /** Text after the flags (subcommands, states, caveats). */
  notes?: string;
}

const column = (left: string, right: string, width: number) =>
  left.length < width ? `  ${left.padEnd(width)}${right}` : `  ${left}\n  ${' '.repeat(width)}${right}`;

/** The help of a command: usage line, summary, every flag, the environment it reads, examples. */
export function helpOf(spec: CommandSpec): string {
  const width = 26;
  const flags = spec.flags.map((f) => column(`--${f.name}${f.value ? ` ${f.value}` : ''}`, f.description, width));
  const env = spec.env.map((e) => column(e.name, e.description, width));
  return [
    `usage: flashpay ${spec.name}${spec.synopsis ? ` ${spec.synopsis}` : ''}`,
    spec.summary,
    ...(flags.length ? ['', 'options:', ...flags] : []),
    ...(spec.notes ? ['', spec.notes.trimEnd()] : []),
    ...(env.length ? ['', 'environment:', ...env] : []),
    '',
    spec.examples.length > 1 ? 'examples:' : 'example:',
    ...spec.examples.map((e) => `  ${e}`),
    '',
  ].join('\n');
}

/** A usage error that ends with the command's whole help, as `--help` prints it. */
export function usageError(spec: CommandSpec, message: string): UsageError {
  return new UsageError(`flashpay ${spec.name}: ${message}\n\n${helpOf(spec)}`);
}

/** Parses argv by the spec: an unknown flag or a wrong number of arguments is a usage error (exit 2). */
export function parseCommand(spec: CommandSpec, argv: string[]): Args {
  const booleans = spec.flags.filter((f) => !f.value).map((f) => f.name);
  const args = parseArgs(argv, booleans);
  const known = new Set(spec.flags.map((f) => f.name));
  const unknown = [...args.flags.keys()].filter((name) => !known.has(name)).map((name) => `--${name}`);
  const { min, max } = spec.positional ?? { min: 0, max: 0 };
  const stray = args.positional.slice(max);
  if (unknown.length + stray.length > 0) throw usageError(spec, `unexpected ${[...unknown, ...stray].join(' ')}`);
  if (args.positional.length < min) throw usageError(spec, `missing argument (${spec.synopsis})`);
  // A flag that takes a value given none (`--port` at the end) would read as `true`: refuse it.
  const empty = spec.flags.find((f) => f.value && args.flags.get(f.name) === true);
  if (empty) throw usageError(spec, `--${empty.name} needs a value (${empty.value})`);
  return args;
}

/**
 * The subcommand of `flashpay cluster --dir D up --json` and its arguments: the first positional
 * argument (read knowing every subcommand's switches), and argv without it for its own spec.
 */
export function splitSubcommand(argv: string[], specs: Record<string, CommandSpec>): [string | undefined, string[]] {
  const booleans = Object.values(specs).flatMap((spec) => spec.flags.filter((f) => !f.value).map((f) => f.name));
  const sub = parseArgs(argv, booleans).positional[0];
  if (sub === undefined) return [undefined, argv];
  const at = argv.indexOf(sub);
  return [sub, [...argv.slice(0, at), ...argv.slice(at + 1)]];
}
