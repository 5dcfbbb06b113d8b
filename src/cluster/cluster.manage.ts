import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ClusterError,
  readState,
  ROOT,
  saveState,
  STOP_GRACE_MS,
  type ClusterState,
  type NodeView,
} from './cluster.state.ts';
import { isAlive, signalNode, spawnNode, waitGone, type NodeRecord } from './node.ts';
import { destroyNetwork, heal, leftovers, NetnsError, partition } from './netns.ts';
import { formationState, roleOf } from './postgres.ts';
import { haproxyServers } from './haproxy.ts';
import { waitBalanced, waitHttp } from './ready.ts';

// A cluster that is up: what each node is now, kill or start one, take the whole of it down.
// Bringing it up is cluster.ts.

/** Every node with its role now: a PostgreSQL node's from the monitor, any other's from its process. */
export async function clusterStatus(dir: string): Promise<{ api: string; channel: string; nodes: NodeView[] }> {
  const state = await readState(dir);
  const pgStates = await formationState(state.monitor).catch(() => []);
  const balancerStates = await haproxyServers(path.join(state.dir, 'haproxy')).catch(() => undefined);
  const nodes = state.nodes.map((node): NodeView => {
    const alive = isAlive(node.pid);
    let role = alive ? 'up' : 'down';
    if (node.kind === 'postgres' && alive) {
      const known = pgStates.find((s) => s.name === node.name);
      role = known ? roleOf(known) : 'unknown';
    } else if (node.kind === 'monitor' && alive) role = 'monitor';
    const balancer = node.kind === 'api' ? balancerStates?.get(node.name) : undefined;
    const where = node.netns ? { netns: node.netns, address: node.address } : {};
    return {
      name: node.name,
      kind: node.kind,
      role,
      pid: node.pid,
      url: node.url,
      ...where,
      ...(balancer ? { balancer } : {}),
    };
  });
  return { api: state.api, channel: state.channel, nodes };
}

function nodeOf(state: ClusterState, name: string): NodeRecord {
  const node = state.nodes.find((n) => n.name === name);
  if (!node)
    throw new ClusterError(`no node "${name}" in ${state.dir}; nodes: ${state.nodes.map((n) => n.name).join(', ')}`);
  return node;
}

/** SIGKILL to every process of the node (a PostgreSQL node: its keeper and its postgres, as a host dies). */
export async function clusterKill(dir: string, name: string): Promise<NodeRecord> {
  const node = nodeOf(await readState(dir), name);
  signalNode(node.pid, 'SIGKILL');
  if (!(await waitGone(node.pid, STOP_GRACE_MS))) throw new ClusterError(`${name} (pid ${node.pid}) is still alive`);
  return node;
}

/** Starts a stopped node again with the command it was first started with (a PostgreSQL node rejoins as a standby). */
export async function clusterStart(dir: string, name: string): Promise<NodeRecord> {
  const state = await readState(dir);
  const node = nodeOf(state, name);
  if (isAlive(node.pid)) return node;
  const started = spawnNode(node, ROOT);
  state.nodes = state.nodes.map((n) => (n.name === name ? started : n));
  await saveState(state);
  if (started.kind === 'api' || started.kind === 'worker') await waitHttp(`${started.url}/readyz`, name, started);
  if (started.kind === 'api') await waitBalanced(state.dir, name);
  return started;
}

// The engines' own binaries: a user's `tail -f` of a log in the directory is not ours to kill.
const ENGINE_BINARIES = new Set(['pg_autoctl', 'postgres', 'nats-server', 'haproxy']);

/** Engine processes whose command line names the cluster's directory: what a killed keeper left behind. */
function strays(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (ENGINE_BINARIES.has(path.basename(argv[0] ?? '')) && argv.some((arg) => arg.includes(dir)))
        pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Stops every node (SIGTERM, then SIGKILL after a grace), newest first, and whatever they left. */
export async function clusterDown(dir: string): Promise<void> {
  const state = await readState(dir);
  const order = [...state.nodes].reverse();
  for (const node of order) signalNode(node.pid, 'SIGTERM');
  for (const node of order)
    if (!(await waitGone(node.pid, STOP_GRACE_MS))) {
      signalNode(node.pid, 'SIGKILL');
      await waitGone(node.pid, STOP_GRACE_MS);
    }
  for (const pid of strays(path.resolve(dir))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const left = strays(path.resolve(dir));
  if (left.length > 0) throw new ClusterError(`processes still running in ${dir}: ${left.join(', ')}`);
  if (state.network) {
    destroyNetwork(state.network);
    const remaining = leftovers(state.network);
    if (remaining.length > 0) throw new ClusterError(`left behind in ${dir}: ${remaining.join(', ')}`);
  }
}

function networkOf(state: ClusterState) {
  if (!state.network)
    throw new ClusterError(
      `the cluster in ${state.dir} is not isolated; start it with: flashpay cluster up --isolated`,
    );
  return state.network;
}

/** Drops every packet between `a` and `b` (default: every other node), both ways; cuts add up until heal. */
export async function clusterPartition(dir: string, a: string[], b?: string[]): Promise<[string, string][]> {
  const state = await readState(dir);
  const network = networkOf(state);
  try {
    partition(network, a, b);
  } catch (error) {
    throw error instanceof NetnsError ? new ClusterError(error.message) : error;
  } finally {
    await saveState(state);
  }
  return network.cuts;
}

/** Every cut removed. */
export async function clusterHeal(dir: string): Promise<void> {
  const state = await readState(dir);
  heal(networkOf(state));
  await saveState(state);
}
