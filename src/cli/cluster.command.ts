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
import { intFlag, parseArgs, stringFlag, UsageError } from '../platform/args.ts';

const USAGE = `usage: flashpay cluster <command> [--dir D]
  up [--api 2] [--nats 3] [--isolated] [--json]
                                     PostgreSQL primary + synchronous standby (pg_auto_failover), a JetStream
                                     cluster, API processes and a worker behind HAProxy, on loopback;
                                     --isolated: each node in a network namespace of its own (root)
  status [--json]                    every node with its role now (which PostgreSQL node is primary)
  kill NAME                          SIGKILL to one node (pg1, pg2, monitor, nats1, api1, worker, haproxy, …)
  start NAME                         starts a killed node again (a PostgreSQL node rejoins as a standby)
  partition A[,B…] [--from C[,D…]]  drops every packet between A,B… and C,D… (default: all others); --isolated
  heal                               restores every path a partition cut
  down                               stops every node; no process, namespace or link is left
  --dir defaults to .flashpay/cluster; as root, the postgres user must be able to reach it.
`;
const FLAGS: Record<string, string[]> = {
  up: ['dir', 'api', 'nats', 'json', 'isolated', 'help'],
  partition: ['dir', 'from', 'help'],
  heal: ['dir', 'help'],
  status: ['dir', 'json', 'help'],
  kill: ['dir', 'help'],
  start: ['dir', 'help'],
  down: ['dir', 'help'],
};
const MAX_API_PROCESSES = 16;
const MAX_NATS_NODES = 5;

const say = (line: string): void => {
  process.stderr.write(`flashpay cluster: ${line}\n`);
};

/** `flashpay cluster up|status|kill|start|down`: a failing-over cluster on one machine, to try and to test. */
export async function clusterCommand(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['json', 'help', 'isolated']);
  const [sub, ...rest] = args.positional;
  if (args.flags.has('help') || argv.includes('-h') || sub === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const known = sub ? FLAGS[sub] : undefined;
  if (!sub || !known) throw new UsageError(`${sub ? `unknown cluster command "${sub}"\n` : ''}${USAGE}`);
  const unknown = [...args.flags.keys()].filter((flag) => !known.includes(flag));
  if (unknown.length > 0) throw new UsageError(`unknown flag ${unknown.map((f) => `--${f}`).join(' ')}\n${USAGE}`);
  const needsName = sub === 'kill' || sub === 'start' || sub === 'partition';
  if (rest.length !== (needsName ? 1 : 0)) throw new UsageError(USAGE);
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

async function run(
  sub: string,
  dir: string,
  name: string,
  args: ReturnType<typeof parseArgs>,
  json: boolean,
): Promise<void> {
  if (sub === 'up') {
    const apis = intFlag(args, 'api', 2);
    const nats = intFlag(args, 'nats', 3);
    if (apis < 1 || apis > MAX_API_PROCESSES) throw new UsageError(`--api must be 1..${MAX_API_PROCESSES}`);
    if (nats > MAX_NATS_NODES || nats === 2)
      throw new UsageError(`--nats must be 0, 1, 3, 4 or 5 (2 nodes have no quorum after one dies)`);
    const isolated = args.flags.has('isolated');
    if (isolated && !isRoot())
      throw new UsageError('cluster up --isolated needs root (network namespaces, veth links, a bridge)');
    await clusterUp({ dir, apis, nats, isolated, log: json ? undefined : say });
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
