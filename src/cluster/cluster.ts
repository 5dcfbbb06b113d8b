import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { loadConfig } from '../platform/config.ts';
import { loadSecrets } from '../platform/secrets.ts';
import { haproxySpec } from './haproxy.ts';
import { natsNodeSpecs } from './nats.config.ts';
import {
  freePorts,
  isAlive,
  portInUse,
  spawnNode,
  waitUntil,
  type NodeKind,
  type NodeRecord,
  type NodeSpec,
} from './node.ts';
import { checkEngines, checkReachable } from './engines.ts';
import { startPgFormation, type Placement } from './postgres.ts';
import { createNetwork, inNamespace, type NetPlan } from './netns.ts';
import { clusterDown } from './cluster.manage.ts';
import { READY_TIMEOUT_MS, waitHttp } from './ready.ts';
import { ClusterError, readState, ROOT, saveState, stateFile, type ClusterState } from './cluster.state.ts';

const FLASHPAY_BIN = path.join(ROOT, 'bin', 'flashpay.js');
/** JetStream answers account info only once the cluster has elected its meta leader. */
async function waitJetStream(servers: string): Promise<void> {
  await waitUntil('the JetStream cluster', READY_TIMEOUT_MS, async () => {
    const nc = await connect({ servers: servers.split(','), timeout: 2_000 });
    try {
      await (await jetstreamManager(nc, { timeout: 2_000 })).getAccountInfo();
      return true;
    } finally {
      await nc.close();
    }
  });
}

function flashpaySpec(
  name: string,
  kind: NodeKind,
  args: string[],
  env: Record<string, string>,
  logs: string,
  url: string,
): NodeSpec {
  return {
    name,
    kind,
    url,
    command: process.execPath,
    args: [FLASHPAY_BIN, ...args],
    env,
    log: path.join(logs, `${name}.log`),
  };
}

export interface UpOptions {
  dir: string;
  apis: number;
  nats: number;
  /** The first of the cluster's ports (`--port-base`); default free ones the kernel picks. */
  portBase?: number;
  /** Every node in a network namespace of its own on one bridge (netns.ts); needs root. */
  isolated?: boolean;
  log?: (line: string) => void;
}

/** The names of every node `up` starts, in the order it starts them. */
function nodeNames(options: UpOptions): string[] {
  return [
    'monitor',
    'pg1',
    'pg2',
    ...Array.from({ length: options.nats }, (_, i) => `nats${i + 1}`),
    'channel',
    'worker',
    ...Array.from({ length: options.apis }, (_, i) => `api${i + 1}`),
    'haproxy',
  ];
}

/** Where a node runs: loopback, or (isolated) its namespace and address. */
function placementOf(network: NetPlan | undefined): Placement & { locate<T extends NodeSpec>(spec: T): T } {
  const nodeOf = (name: string) => network?.nodes.find((n) => n.name === name);
  return {
    hostOf: (name) => nodeOf(name)?.address ?? '127.0.0.1',
    wrap(name, command) {
      const node = nodeOf(name);
      return node ? inNamespace(node, command.command, command.args) : command;
    },
    network: network ? `${network.prefix}.0/24` : '127.0.0.1/32',
    locate(spec) {
      const node = nodeOf(spec.name);
      if (!node) return spec;
      // A PostgreSQL node's spec comes wrapped already (pg_autoctl runs in its namespace).
      const wrapped = spec.command === 'ip' ? spec : { ...spec, ...inNamespace(node, spec.command, spec.args) };
      return { ...wrapped, netns: node.netns, address: node.address };
    },
  };
}

/**
 * Starts the whole cluster on loopback; every node is recorded in `cluster.json` as soon as it is
 * spawned, so a failed `up` is cleaned by `down` (which `up` itself calls before giving up).
 */
export async function clusterUp(options: UpOptions): Promise<ClusterState> {
  const { dir } = options;
  const log = options.log ?? (() => undefined);
  checkEngines(options.nats);
  if (existsSync(stateFile(dir)) && (await readState(dir)).nodes.some((n) => isAlive(n.pid)))
    throw new ClusterError(`a cluster is already running in ${dir}; stop it with: flashpay cluster down --dir ${dir}`);
  await mkdir(dir, { recursive: true });
  checkReachable(path.join(dir, 'pg'));
  const logs = path.join(dir, 'logs');
  await mkdir(logs, { recursive: true });
  const state: ClusterState = {
    dir,
    api: '',
    channel: '',
    databaseUrl: '',
    monitor: '',
    natsUrl: undefined,
    nodes: [],
  };
  await saveState(state);
  try {
    if (options.isolated) {
      log('making the cluster network: a namespace per node on one bridge');
      state.network = createNetwork(dir, nodeNames(options));
      await saveState(state);
    }
    await startAll(state, options, logs, log);
    return state;
  } catch (error) {
    log(`up failed (${(error as Error).message}); stopping what started; logs in ${logs}`);
    await clusterDown(dir).catch(() => undefined);
    throw error;
  }
}

/** Kernel-picked free ports, or with `--port-base` the ports from it upward, refused if one is taken. */
async function portsFor(count: number, base: number | undefined): Promise<number[]> {
  if (base === undefined) return freePorts(count);
  const ports = Array.from({ length: count }, (_, i) => base + i);
  const taken = await portInUse(ports);
  if (taken !== undefined)
    throw new ClusterError(
      `--port-base ${base}: port ${taken} is in use (the cluster needs ${base}..${base + count - 1})`,
    );
  return ports;
}

async function startAll(
  state: ClusterState,
  options: UpOptions,
  logs: string,
  log: (line: string) => void,
): Promise<void> {
  const ports = await portsFor(3 + options.nats * 2 + 3 + options.apis, options.portBase);
  const take = (n: number) => ports.splice(0, n);
  const place = placementOf(state.network);
  const host = place.hostOf;
  const add = async (record: NodeRecord) => {
    state.nodes.push(record);
    await saveState(state);
    return record;
  };

  log('starting the PostgreSQL formation (pg_auto_failover: a monitor, a primary, a synchronous standby)');
  const [monitorPort = 0, pg1 = 0, pg2 = 0] = take(3);
  const formation = await startPgFormation({
    dir: path.join(state.dir, 'pg'),
    logs,
    cwd: ROOT,
    ports: [monitorPort, pg1, pg2],
    ...(state.network ? { placement: place } : {}),
  });
  state.nodes.push(...formation.nodes.map((node) => place.locate(node)));
  state.databaseUrl = formation.databaseUrl;
  state.monitor = formation.monitor;
  await saveState(state);

  if (options.nats > 0) {
    log(`starting a JetStream cluster of ${options.nats} nats-server nodes`);
    const natsPorts = take(options.nats * 2);
    const specs = await natsNodeSpecs({
      dir: path.join(state.dir, 'nats'),
      logs,
      ports: Array.from({ length: options.nats }, (_, i) => ({
        client: natsPorts[i * 2] ?? 0,
        route: natsPorts[i * 2 + 1] ?? 0,
      })),
      hosts: Array.from({ length: options.nats }, (_, i) => host(`nats${i + 1}`)),
    });
    for (const spec of specs) await add(spawnNode(place.locate(spec), ROOT));
    state.natsUrl = specs.map((s) => s.url).join(',');
    await waitJetStream(state.natsUrl);
  }

  const config = loadConfig();
  const secrets = await loadSecrets({ ...config, dataDir: path.join(state.dir, 'data') });
  const [channelPort = 0, workerPort = 0, haproxyPort = 0, ...apiPorts] = ports;
  const api = `http://${host('haproxy')}:${haproxyPort}`;
  state.channel = `http://${host('channel')}:${channelPort}`;
  const env = (name: string): Record<string, string> => ({
    // Isolated, each listens on its own address, and the channel notifies the API through HAProxy's:
    // not loopback, so it is named to the channel's allow-list of notification hosts.
    ...(state.network
      ? {
          FLASHPAY_HOST: host(name),
          FLASHPAY_CHANNEL_HOST: host(name),
          FLASHPAY_CHANNEL_NOTIFY_HOSTS: `127.0.0.1,localhost,::1,${host('haproxy')}`,
        }
      : {}),
    DATABASE_URL: state.databaseUrl,
    FLASHPAY_DATA_DIR: path.join(state.dir, 'data', name),
    FLASHPAY_JWT_SECRET: secrets.jwt,
    FLASHPAY_NOTIFY_SECRET: secrets.notify,
    FLASHPAY_EVENTS_SECRET: secrets.events,
    FLASHPAY_CHANNEL_URL: state.channel,
    FLASHPAY_PUBLIC_URL: api,
    ...(state.natsUrl
      ? {
          NATS_URL: state.natsUrl,
          FLASHPAY_OUTBOX_SINK: 'nats',
          FLASHPAY_NATS_REPLICAS: String(Math.min(3, options.nats)),
        }
      : {}),
  });

  log('starting the provider double, the API processes and the worker');
  const channel = await add(
    spawnNode(
      place.locate(
        flashpaySpec(
          'channel',
          'channel',
          ['channel', '--port', String(channelPort), '--control'],
          env('channel'),
          logs,
          state.channel,
        ),
      ),
      ROOT,
    ),
  );
  await waitHttp(`${state.channel}/docs/json`, 'the provider double', channel);
  // The worker first: it migrates the schema once, so the API processes start on a migrated database.
  const worker = await add(
    spawnNode(
      place.locate(
        flashpaySpec(
          'worker',
          'worker',
          ['start', '--role', 'worker', '--port', String(workerPort)],
          env('worker'),
          logs,
          `http://${host('worker')}:${workerPort}`,
        ),
      ),
      ROOT,
    ),
  );
  await waitHttp(`${worker.url}/readyz`, 'the worker', worker);
  const apis = apiPorts.map((port, i) => ({ name: `api${i + 1}`, port, host: host(`api${i + 1}`) }));
  for (const a of apis)
    await add(
      spawnNode(
        place.locate(
          flashpaySpec(
            a.name,
            'api',
            ['start', '--role', 'api', '--port', String(a.port)],
            env(a.name),
            logs,
            `http://${host(a.name)}:${a.port}`,
          ),
        ),
        ROOT,
      ),
    );
  for (const a of apis)
    await waitHttp(
      `http://${host(a.name)}:${a.port}/readyz`,
      a.name,
      state.nodes.find((n) => n.name === a.name),
    );

  const haproxyDir = path.join(state.dir, 'haproxy');
  await mkdir(haproxyDir, { recursive: true });
  const balancer = await haproxySpec({ dir: haproxyDir, logs, port: haproxyPort, apis, host: host('haproxy') });
  await add(spawnNode(place.locate(balancer), ROOT));
  state.api = api;
  await saveState(state);
  await waitHttp(`${api}/readyz`, 'the API through HAProxy');
}
