import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { natsServers } from '../platform/nats.ts';
import { natsNodeSpecs } from './nats.config.ts';
import { freePorts, isAlive, signalNode, spawnNode, waitGone, waitUntil, type NodeSpec } from './node.ts';

// A JetStream cluster of nats-server processes on loopback, for `flashpay cluster up` and for the
// tests that kill its nodes. Each node is its own process group (detached), so a kill takes the
// node and nothing else, and it keeps its store across a restart, as a host that reboots does.

export const NATS_APT_LINE = 'apt-get install -y nats-server';
const DEBIAN_BINARY = '/usr/sbin/nats-server';
// A cold cluster elects its meta leader in a few seconds; a restarted node catches up as fast.
const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 10_000;
const PROBE_TIMEOUT_MS = 2_000;

export class NatsClusterError extends Error {}

/** The nats-server binary: Debian's, or the first on PATH; undefined when there is none. */
export function findNatsServer(): string | undefined {
  if (existsSync(DEBIAN_BINARY)) return DEBIAN_BINARY;
  for (const dir of (process.env.PATH ?? '').split(':'))
    if (dir && existsSync(path.join(dir, 'nats-server'))) return path.join(dir, 'nats-server');
  return undefined;
}

export function requireNatsServer(): string {
  const binary = findNatsServer();
  if (!binary) throw new NatsClusterError(`nats-server not found (${DEBIAN_BINARY} or PATH): ${NATS_APT_LINE}`);
  return binary;
}

export interface NatsNode {
  name: string;
  /** The process group's leader; changes on restart. */
  readonly pid: number;
  /** This node's client URL, `nats://127.0.0.1:<port>`. */
  url: string;
  log: string;
  alive(): boolean;
  /** SIGKILL, as a host dies: no lame-duck, no flush. */
  kill(): Promise<void>;
  /** Starts the node again on its ports and store and waits until its JetStream answers. */
  restart(): Promise<void>;
}

export interface NatsCluster {
  nodes: NatsNode[];
  /** Every node's URL, comma-separated: what `NATS_URL` should be. */
  servers: string;
  node(name: string): NatsNode;
  /** SIGTERM to every node, SIGKILL to what outlives the grace; leaves no process behind. */
  stop(): Promise<void>;
}

async function probeJetStream(url: string): Promise<true> {
  const nc = await connect({ servers: url, timeout: PROBE_TIMEOUT_MS, maxReconnectAttempts: 0 });
  try {
    await (await jetstreamManager(nc, { timeout: PROBE_TIMEOUT_MS })).getAccountInfo();
    return true;
  } finally {
    await nc.close();
  }
}

/**
 * Waits until JetStream answers through `url` alone: a clustered server answers the API only once
 * the cluster has a meta leader, so this is "the cluster has formed, as seen from this node".
 */
export async function waitJetStreamReady(url: string, timeoutMs = READY_TIMEOUT_MS): Promise<void> {
  await waitUntil(`JetStream at ${url}`, timeoutMs, () => probeJetStream(url));
}

/** As waitJetStreamReady, but a node that exits meanwhile fails at once, with the end of its log. */
async function waitNodeReady(node: NatsNode): Promise<void> {
  const outcome = await waitUntil(`JetStream at ${node.name} (${node.url})`, READY_TIMEOUT_MS, async () =>
    node.alive() ? probeJetStream(node.url) : ('exited' as const),
  );
  if (outcome === 'exited')
    throw new NatsClusterError(`${node.name} exited; the end of ${node.log}:\n${tail(node.log)}`);
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** The server name of a stream's current leader (undefined while it has none, or when standalone). */
export async function streamLeader(servers: string, stream: string): Promise<string | undefined> {
  const nc = await connect({ servers: natsServers(servers), timeout: PROBE_TIMEOUT_MS });
  try {
    const info = await (await jetstreamManager(nc, { timeout: PROBE_TIMEOUT_MS })).streams.info(stream);
    return info.cluster?.leader || undefined;
  } finally {
    await nc.close();
  }
}

function natsNode(spec: NodeSpec, cwd: string): NatsNode {
  let pid = spawnNode(spec, cwd).pid;
  const node: NatsNode = {
    name: spec.name,
    url: spec.url,
    log: spec.log,
    get pid() {
      return pid;
    },
    alive: () => isAlive(pid),
    async kill() {
      signalNode(pid, 'SIGKILL');
      if (!(await waitGone(pid, STOP_GRACE_MS)))
        throw new NatsClusterError(`${spec.name} (pid ${pid}) outlived SIGKILL`);
    },
    async restart() {
      if (isAlive(pid)) throw new NatsClusterError(`${spec.name} is running (pid ${pid}); kill it first`);
      pid = spawnNode(spec, cwd).pid;
      await waitNodeReady(node);
    },
  };
  return node;
}

async function stopNode(node: NatsNode): Promise<void> {
  signalNode(node.pid, 'SIGTERM');
  if (await waitGone(node.pid, STOP_GRACE_MS)) return;
  signalNode(node.pid, 'SIGKILL');
  await waitGone(node.pid, STOP_GRACE_MS);
}

/**
 * Starts `nodes` nats-server processes forming one JetStream cluster on 127.0.0.1: node i has
 * client port basePort+2i and route port basePort+2i+1 (free ports when basePort is not given),
 * its config, store and log under `dir`. Resolves once every node answers the JetStream API.
 */
export async function startNatsCluster(options: {
  dir: string;
  nodes?: number;
  basePort?: number;
}): Promise<NatsCluster> {
  const binary = requireNatsServer();
  const count = options.nodes ?? 3;
  if (!Number.isInteger(count) || count < 1) throw new NatsClusterError(`nodes must be an integer >= 1, got ${count}`);
  await mkdir(options.dir, { recursive: true });
  const ports =
    options.basePort === undefined
      ? await freePorts(count * 2)
      : Array.from({ length: count * 2 }, (_, i) => (options.basePort ?? 0) + i);
  const specs = await natsNodeSpecs({
    dir: options.dir,
    logs: options.dir,
    ports: Array.from({ length: count }, (_, i) => ({ client: ports[i * 2] ?? 0, route: ports[i * 2 + 1] ?? 0 })),
  });
  const nodes: NatsNode[] = [];
  const cluster: NatsCluster = {
    nodes,
    servers: specs.map((s) => s.url).join(','),
    node(name) {
      const found = nodes.find((n) => n.name === name);
      if (!found) throw new NatsClusterError(`no NATS node "${name}"; nodes: ${nodes.map((n) => n.name).join(', ')}`);
      return found;
    },
    async stop() {
      await Promise.all(nodes.map(stopNode));
    },
  };
  try {
    for (const spec of specs) nodes.push(natsNode({ ...spec, command: binary }, options.dir));
    await Promise.all(nodes.map(waitNodeReady));
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}
