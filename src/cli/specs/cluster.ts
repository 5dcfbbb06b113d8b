import type { CommandSpec } from '../../platform/args.ts';

const DIR = { name: 'dir', value: 'D', description: 'the cluster’s folder (default .flashpay/cluster)' };
const JSON_FLAG = { name: 'json', description: 'as JSON' };
const NODES = 'pg1, pg2, monitor, nats1…, api1…, worker, haproxy, channel';

export const CLUSTER_UP: CommandSpec = {
  name: 'cluster up',
  synopsis: '[options]',
  summary:
    'A PostgreSQL primary + synchronous standby (pg_auto_failover), a JetStream cluster, API\n' +
    'processes and a worker behind HAProxy, on loopback (or, --isolated, each node in a network\n' +
    'namespace of its own on one bridge); prints where each node is.',
  flags: [
    DIR,
    { name: 'api', value: 'N', description: 'API processes, 1..16 (default 2)' },
    { name: 'nats', value: 'N', description: 'NATS nodes: 0, 1, 3, 4 or 5 (default 3)' },
    {
      name: 'port-base',
      value: 'N',
      description: 'ports from N upward, one per listener, instead of free ones the kernel picks',
    },
    {
      name: 'isolated',
      description: 'every node in a network namespace of its own, on a bridge in a free private /24 (root)',
    },
    JSON_FLAG,
  ],
  env: [
    {
      name: 'PATH',
      description: 'pg_autoctl, haproxy and nats-server are looked up in it (and Debian’s PostgreSQL bin)',
    },
  ],
  notes: 'As root, the postgres user must be able to reach --dir.',
  examples: [
    'flashpay cluster up --dir /tmp/fp --api 2 --nats 3 --json',
    'flashpay cluster up --port-base 21000',
    'flashpay cluster up --isolated --dir /tmp/fp',
  ],
};

export const CLUSTER_STATUS: CommandSpec = {
  name: 'cluster status',
  synopsis: '[options]',
  summary: 'Every node with its role now (which PostgreSQL node is primary).',
  flags: [DIR, JSON_FLAG],
  env: [],
  examples: ['flashpay cluster status --dir /tmp/fp --json'],
};

export const CLUSTER_KILL: CommandSpec = {
  name: 'cluster kill',
  synopsis: 'NAME [--dir D]',
  summary: `SIGKILL to one node (${NODES}).`,
  positional: { min: 1, max: 1 },
  flags: [DIR],
  env: [],
  examples: ['flashpay cluster kill pg1 --dir /tmp/fp'],
};

export const CLUSTER_START: CommandSpec = {
  name: 'cluster start',
  synopsis: 'NAME [--dir D]',
  summary: 'Starts a killed node again (a PostgreSQL node rejoins as a standby).',
  positional: { min: 1, max: 1 },
  flags: [DIR],
  env: [],
  examples: ['flashpay cluster start pg1 --dir /tmp/fp'],
};

export const CLUSTER_PARTITION: CommandSpec = {
  name: 'cluster partition',
  synopsis: 'A[,B…] [--from C[,D…]] [--dir D]',
  summary:
    'Drops (never refuses) every packet between the named nodes and all others, or only between\n' +
    'the two groups. An --isolated cluster only.',
  positional: { min: 1, max: 1 },
  flags: [DIR, { name: 'from', value: 'C[,D…]', description: 'the other side (default: every other node)' }],
  env: [],
  examples: ['flashpay cluster partition pg1 --dir /tmp/fp', 'flashpay cluster partition api1 --from pg1,pg2'],
};

export const CLUSTER_HEAL: CommandSpec = {
  name: 'cluster heal',
  synopsis: '[--dir D]',
  summary: 'Restores every path a partition cut.',
  flags: [DIR],
  env: [],
  examples: ['flashpay cluster heal --dir /tmp/fp'],
};

export const CLUSTER_DOWN: CommandSpec = {
  name: 'cluster down',
  synopsis: '[--dir D]',
  summary: 'Stops every node; no process, namespace or link is left.',
  flags: [DIR],
  env: [],
  examples: ['flashpay cluster down --dir /tmp/fp'],
};

export const CLUSTER_SUBCOMMANDS: Record<string, CommandSpec> = {
  up: CLUSTER_UP,
  status: CLUSTER_STATUS,
  kill: CLUSTER_KILL,
  start: CLUSTER_START,
  partition: CLUSTER_PARTITION,
  heal: CLUSTER_HEAL,
  down: CLUSTER_DOWN,
};

export const CLUSTER: CommandSpec = {
  name: 'cluster',
  synopsis: 'up|status|kill NAME|start NAME|partition A,B|heal|down [options]',
  summary: 'A failing-over cluster on one machine, to try and to test. `flashpay cluster up --help` for each.',
  positional: { min: 1, max: 2 },
  flags: [DIR],
  env: [],
  notes: `commands:\n${Object.values(CLUSTER_SUBCOMMANDS)
    .map((s) => `  ${s.name.slice('cluster '.length).padEnd(24)}${s.summary.split('\n')[0]}`)
    .join('\n')}`,
  examples: ['flashpay cluster up --dir /tmp/fp', 'flashpay cluster kill pg1 --dir /tmp/fp'],
};
