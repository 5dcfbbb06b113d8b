import { execFile } from 'node:child_process';
import { appendFile, chown, mkdir } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { spawnNode, waitUntil, type NodeRecord, type NodeSpec } from './node.ts';

const run = promisify(execFile);

// pg_auto_failover's defaults take ~32 s from a primary's death to the standby taking writes
// (20 s to call a node unhealthy, then 30 s of demote timeout). A formation for trying failover on one
// machine shortens them; docs/deploy.md gives the production values and why they are longer.
// The keeper's own network_partition_timeout (3 s) stays below primary_demote_timeout (5 s): an old
// primary cut off from the monitor demotes itself before the monitor promotes its standby.
const MONITOR_SETTINGS = {
  'pgautofailover.health_check_period': 1000,
  'pgautofailover.health_check_timeout': 1000,
  'pgautofailover.health_check_max_retries': 1,
  'pgautofailover.health_check_retry_delay': 500,
  'pgautofailover.node_considered_unhealthy_timeout': 2000,
  'pgautofailover.primary_demote_timeout': 5000,
};
const NETWORK_PARTITION_TIMEOUT_S = 3;
// N API processes and a worker, each with its pool, plus the monitor's and the standby's sessions.
const NODE_SETTINGS = { max_connections: 400 };
const FORMATION_TIMEOUT_MS = 180_000;

export const SERVICE_DATABASE = 'flashpay';

/** The newest PostgreSQL whose binaries and pgautofailover extension are both installed (Debian layout). */
export function pgBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(`/usr/share/postgresql/${v}/extension/pgautofailover.control`))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : undefined;
}

interface Formation {
  dir: string;
  bin: string;
  /** XDG dirs of pg_autoctl's config and state: inside the cluster's directory, not postgres's home. */
  env: Record<string, string>;
  placement?: Placement;
}

type Command = { command: string; args: string[] };

/**
 * Where each node lives under `cluster up --isolated` (netns.ts): its address, the command that runs
 * inside its namespace, and the /24 every node (and the host) talks from.
 */
export interface Placement {
  hostOf(name: string): string;
  wrap(name: string, command: Command): Command;
  network: string;
}

const isRoot = () => process.getuid?.() === 0;

/** pg_autoctl refuses to run as root: as root, it runs as `postgres`. */
function asPostgres(formation: Formation, args: string[]): { command: string; args: string[] } {
  const env = Object.entries({ ...formation.env, PATH: `${formation.bin}:/usr/bin:/bin` }).map(([k, v]) => `${k}=${v}`);
  return isRoot()
    ? { command: 'runuser', args: ['-u', 'postgres', '--', 'env', ...env, 'pg_autoctl', ...args] }
    : { command: 'env', args: [...env, 'pg_autoctl', ...args] };
}

async function autoctl(
  formation: Formation,
  args: string[],
  timeoutMs = FORMATION_TIMEOUT_MS,
  node?: string,
): Promise<string> {
  const plain = asPostgres(formation, args);
  const { command, args: argv } = node && formation.placement ? formation.placement.wrap(node, plain) : plain;
  const { stdout } = await run(command, argv, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function ownedByPostgres(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  if (!isRoot()) return;
  const { stdout } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  await chown(dir, Number(stdout.trim()), Number(gid.trim()));
}

function formationOf(dir: string): Formation {
  const bin = pgBinDir();
  if (!bin) throw new Error('no PostgreSQL with pg_auto_failover found under /usr/lib/postgresql');
  const xdg = path.join(dir, 'xdg');
  return { dir, bin, env: { XDG_CONFIG_HOME: path.join(xdg, 'config'), XDG_DATA_HOME: path.join(xdg, 'data') } };
}

export const monitorUrl = (port: number, host = '127.0.0.1') =>
  `postgres://autoctl_node@${host}:${port}/pg_auto_failover?sslmode=disable`;

function runSpec(
  formation: Formation,
  name: string,
  kind: 'monitor' | 'postgres',
  url: string,
  logs: string,
): NodeSpec {
  const dataDir = path.join(formation.dir, name);
  const plain = asPostgres(formation, ['run', '--pgdata', dataDir]);
  const { command, args } = formation.placement ? formation.placement.wrap(name, plain) : plain;
  return { name, kind, url, command, args, env: {}, log: path.join(logs, `${name}.log`), dataDir };
}

async function appendSettings(dataDir: string, settings: Record<string, number | string>): Promise<void> {
  const lines = Object.entries(settings).map(([k, v]) => `${k} = ${v}`);
  await appendFile(path.join(dataDir, 'postgresql.conf'), `\n# flashpay cluster\n${lines.join('\n')}\n`);
}

/**
 * Isolated, the API processes, the worker, the channel and the host (the bridge) reach PostgreSQL
 * from their own addresses: the cluster's /24 is trusted as loopback is in the plain cluster (a
 * development cluster; docs/deploy.md has production's authentication).
 */
async function trustNetwork(dataDir: string, placement: Placement | undefined): Promise<void> {
  if (!placement) return;
  const lines = [`host all all ${placement.network} trust`, `host replication all ${placement.network} trust`];
  await appendFile(path.join(dataDir, 'pg_hba.conf'), `\n# flashpay cluster --isolated\n${lines.join('\n')}\n`);
}

export interface PostgresNodeState {
  name: string;
  host: string;
  port: number;
  reportedState: string;
  goalState: string;
}

/** What the monitor knows of every data node now. */
export async function formationState(monitor: string): Promise<PostgresNodeState[]> {
  const client = new pg.Client({ connectionString: monitor, connectionTimeoutMillis: 2_000 });
  await client.connect();
  try {
    const { rows } = await client.query<PostgresNodeState>(
      `SELECT nodename AS name, nodehost AS host, nodeport AS port,
              reportedstate AS "reportedState", goalstate AS "goalState"
         FROM pgautofailover.node ORDER BY nodeid`,
    );
    return rows;
  } finally {
    await client.end();
  }
}

/** `primary` / `standby` as the contract names them, from pg_auto_failover's states. */
export function roleOf(node: PostgresNodeState): string {
  const { reportedState: reported, goalState: goal } = node;
  if (['single', 'wait_primary', 'primary', 'join_primary', 'apply_settings'].includes(reported) && reported === goal)
    return 'primary';
  if (['secondary', 'catchingup', 'wait_standby'].includes(reported) && reported === goal) return 'standby';
  return `${reported}->${goal}`; // in transition: the engine's own words
}

async function waitStates(monitor: string, want: Record<string, string[]>): Promise<void> {
  await waitUntil(`pg_auto_failover states ${JSON.stringify(want)}`, FORMATION_TIMEOUT_MS, async () => {
    const nodes = await formationState(monitor);
    const ok = Object.entries(want).every(([name, states]) => {
      const node = nodes.find((n) => n.name === name);
      return node && states.includes(node.reportedState) && node.reportedState === node.goalState;
    });
    return ok ? true : undefined;
  });
}

/** Keeps issuing CHECKPOINT on the primary: a standby's pg_basebackup waits for a spread one (90 s here). */
function checkpointsUntil(url: string, done: Promise<unknown>): Promise<void> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => undefined);
  return (async () => {
    while (!finished) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
      await client
        .connect()
        .then(() => client.query('CHECKPOINT'))
        .catch(() => undefined);
      await client.end().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
}

export interface PgFormation {
  nodes: NodeRecord[];
  /** libpq's multi-host form: flashpay follows whichever node is the writable primary. */
  databaseUrl: string;
  monitor: string;
}

/**
 * A pg_auto_failover formation on loopback: a monitor, a primary and a synchronous standby
 * (pg_auto_failover's default for two data nodes: `synchronous_standby_names = 'ANY 1 (…)'`).
 */
export async function startPgFormation(options: {
  dir: string;
  logs: string;
  cwd: string;
  ports: [number, number, number];
  placement?: Placement;
}): Promise<PgFormation> {
  await ownedByPostgres(options.dir);
  const formation = { ...formationOf(options.dir), placement: options.placement };
  const hostOf = (name: string) => options.placement?.hostOf(name) ?? '127.0.0.1';
  for (const dir of Object.values(formation.env)) await ownedByPostgres(dir);
  const [monitorPort, ...dataPorts] = options.ports;
  const monitor = monitorUrl(monitorPort, hostOf('monitor'));
  const nodes: NodeRecord[] = [];

  const monitorDir = path.join(options.dir, 'monitor');
  const common = (name: string) => ['--hostname', hostOf(name), '--auth', 'trust', '--no-ssl'];
  await autoctl(
    formation,
    ['create', 'monitor', '--pgdata', monitorDir, '--pgport', String(monitorPort), ...common('monitor')],
    FORMATION_TIMEOUT_MS,
    'monitor',
  );
  await appendSettings(monitorDir, MONITOR_SETTINGS);
  await trustNetwork(monitorDir, options.placement);
  nodes.push(spawnNode(runSpec(formation, 'monitor', 'monitor', monitor, options.logs), options.cwd));
  await waitUntil('the pg_auto_failover monitor', 60_000, async () => (await formationState(monitor)) && true);

  const urls: string[] = [];
  for (const [index, port] of dataPorts.entries()) {
    const name = `pg${index + 1}`;
    const dataDir = path.join(options.dir, name);
    const url = `postgres://postgres@${hostOf(name)}:${port}/${SERVICE_DATABASE}`;
    const create = autoctl(formation, [
      'create', 'postgres', '--pgdata', dataDir, '--pgport', String(port), '--name', name,
      '--dbname', SERVICE_DATABASE, '--monitor', monitor, ...common(name),
    ], FORMATION_TIMEOUT_MS, name); // prettier-ignore
    if (index > 0) void checkpointsUntil(urls[0] ?? '', create);
    await create;
    await autoctl(formation, [
      'config',
      'set',
      '--pgdata',
      dataDir,
      'timeout.network_partition_timeout',
      String(NETWORK_PARTITION_TIMEOUT_S),
    ]);
    await appendSettings(dataDir, NODE_SETTINGS);
    await trustNetwork(dataDir, options.placement);
    nodes.push(spawnNode(runSpec(formation, name, 'postgres', url, options.logs), options.cwd));
    urls.push(url);
    await waitStates(monitor, index === 0 ? { pg1: ['single'] } : { pg1: ['primary'], [name]: ['secondary'] });
  }
  const hosts = dataPorts.map((port, index) => `${hostOf(`pg${index + 1}`)}:${port}`).join(',');
  return {
    nodes,
    monitor,
    databaseUrl: `postgres://postgres@${hosts}/${SERVICE_DATABASE}?target_session_attrs=read-write`,
  };
}

/**
 * Synchronous (the default) or asynchronous replication to `name`: `replication-quorum false` takes
 * the standby out of `synchronous_standby_names`, so the primary acknowledges commits it alone has.
 */
export async function setReplicationQuorum(dir: string, name: string, synchronous: boolean): Promise<void> {
  const formation = formationOf(dir);
  await autoctl(formation, [
    'set',
    'node',
    'replication-quorum',
    String(synchronous),
    '--pgdata',
    path.join(dir, name),
  ]);
}

export const pgDirOf = (clusterDir: string) => path.join(clusterDir, 'pg');
