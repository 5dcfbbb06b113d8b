import path from 'node:path';
import {
  ClusterError,
  clusterDown,
  clusterHeal,
  clusterKill,
  clusterPartition,
  clusterStart,
  clusterStatus,
  clusterUp,
  isRoot,
} from '../cluster/index.ts';
import {
  intFlag,
  parseCommand,
  splitSubcommand,
  stringFlag,
  usageError,
  UsageError,
  type Args,
} from '../platform/args.ts';
import { CLUSTER, CLUSTER_SUBCOMMANDS } from './specs/index.ts';

const MAX_API_PROCESSES = 16;
const MAX_NATS_NODES = 5;

// Ports must fit below 65536 with room for every listener (at most 8 + 2 * NATS + APIs).
const MAX_PORT_BASE = 65_000;
const MIN_PORT_BASE = 1_024;

function portBaseOf(args: Args): number {
  const base = intFlag(args, 'port-base', 0);
  if (base < MIN_PORT_BASE || base > MAX_PORT_BASE)
    throw new UsageError(
      `--port-base must be ${MIN_PORT_BASE}..${MAX_PORT_BASE} (an unprivileged port with room above it)`,
    );
  return base;
}

const say = (line: string): void => {
  process.stderr.write(`flashpay cluster: ${line}\n`);
};

/** `flashpay cluster up|status|kill|start|partition|heal|down`: a failing-over cluster on one machine, to try and to test. */
export async function clusterCommand(argv: string[]): Promise<void> {
  const [sub, own] = splitSubcommand(argv, CLUSTER_SUBCOMMANDS);
  const spec = sub === undefined ? undefined : CLUSTER_SUBCOMMANDS[sub];
  if (!sub || !spec) throw usageError(CLUSTER, sub ? `unknown cluster command "${sub}"` : 'which command?');
  const args = parseCommand(spec, own);
  const rest = args.positional;
  const dir = path.resolve(stringFlag(args, 'dir') ?? path.join('.flashpay', 'cluster'));
  const json = args.flags.has('json');
  try {
    await run(sub, dir, rest[0] ?? '', args, json);
  } catch (error) {
    if (!(error instanceof ClusterError)) throw error;
    process.stderr.write(`flashpay cluster: ${error.message}\n`);
    process.exit(1);
  }
}

async function run(sub: string, dir: string, name: string, args: Args, json: boolean): Promise<void> {
  if (sub === 'up') {
    const apis = intFlag(args, 'api', 2);
    const nats = intFlag(args, 'nats', 3);
    if (apis < 1 || apis > MAX_API_PROCESSES) throw new UsageError(`--api must be 1..${MAX_API_PROCESSES}`);
    if (nats > MAX_NATS_NODES || nats === 2)
      throw new UsageError(`--nats must be 0, 1, 3, 4 or 5 (2 nodes have no quorum after one dies)`);
    const portBase = args.flags.has('port-base') ? portBaseOf(args) : undefined;
    const isolated = args.flags.has('isolated');
    if (isolated && !isRoot())
      throw new UsageError('cluster up --isolated needs root (network namespaces, veth links, a bridge)');
    await clusterUp({
      dir,
      apis,
      nats,
      isolated,
      ...(portBase !== undefined ? { portBase } : {}),
      log: json ? undefined : say,
    });
    return print(await clusterStatus(dir), json, dir);
  }
  if (sub === 'status') return print(await clusterStatus(dir), json, dir);
  if (sub === 'kill') {
    const node = await clusterKill(dir, name);
    return say(`killed ${node.name} (pid ${node.pid})`);
  }
  if (sub === 'partition') {
    const list = (text: string) => text.split(',').filter(Boolean);
    const from = stringFlag(args, 'from');
    const cuts = await clusterPartition(dir, list(name), from === undefined ? undefined : list(from));
    return say(`partitioned: ${cuts.map(([a, b]) => `${a} x ${b}`).join(', ')}`);
  }
  if (sub === 'heal') {
    await clusterHeal(dir);
    return say('healed: every path restored');
  }
  if (sub === 'start') {
    const node = await clusterStart(dir, name);
    return say(`started ${node.name} (pid ${node.pid})`);
  }
  await clusterDown(dir);
  say(`stopped every node in ${dir}`);
}

function print(status: Awaited<ReturnType<typeof clusterStatus>>, json: boolean, dir: string): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(status)}\n`);
    return;
  }
  const lines = status.nodes.map(
    (n) =>
      `  ${n.name.padEnd(8)} ${n.kind.padEnd(9)} ${n.role.padEnd(12)} pid ${String(n.pid).padEnd(8)} ${n.url}` +
      (n.balancer ? `  HAProxy: ${n.balancer}` : ''),
  );
  process.stdout.write(
    `flashpay API      ${status.api}  (through HAProxy)\nflashpay channel  ${status.channel}\n${lines.join('\n')}\n` +
      `tokens: FLASHPAY_DATA_DIR=${path.join(dir, 'data')} npx flashpay token --tenant acme --user alice\n`,
  );
}
