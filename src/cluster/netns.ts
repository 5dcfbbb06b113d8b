import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';

// The cluster's own network (issue 50): one Linux network namespace per node, each with a veth
// whose other end is on one bridge, addresses in a private /24 chosen free. A partition is made of
// drops, never refusals: each side gets a permanent neighbour entry for the other's address that
// names a MAC no one has, so its frames leave and vanish on the bridge, as behind a dead switch
// port (no iptables or tc netem here; a link down would also cut the node from everyone).

export interface NetNode {
  name: string;
  netns: string;
  address: string;
}

export interface NetPlan {
  /** The /24's first three octets, e.g. `10.213.7`. */
  prefix: string;
  bridge: string;
  /** The bridge's own address: where the host (the tests, the CLI) reaches the nodes from. */
  gateway: string;
  nodes: NetNode[];
  /** Pairs of node names that cannot reach each other now. */
  cuts: [string, string][];
}

// A locally administered unicast MAC that no interface of ours carries: frames to it are dropped.
const NOWHERE_MAC = '02:00:5e:00:de:ad';
const DEVICE = 'eth0';
// Node addresses start here (.1 is the bridge); the /24 holds far more nodes than a cluster has.
const FIRST_HOST = 10;

export class NetnsError extends Error {}

export const isRoot = () => process.getuid?.() === 0;

function ip(args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function inNs(netns: string, args: string[]): string {
  return ip(['netns', 'exec', netns, 'ip', ...args]);
}

/** Every /24 prefix (first three octets) an address or a route of this host already uses. */
function prefixesInUse(): Set<string> {
  const text = `${ip(['-o', '-4', 'addr'])}\n${ip(['-4', 'route'])}`;
  return new Set([...text.matchAll(/\b(\d+\.\d+\.\d+)\.\d+/g)].map((m) => m[1]!));
}

/** A free 10.X.Y.0/24, X in 200..249, derived from `seed` first so the same dir tends to get the same one. */
export function pickPrefix(seed: string): string {
  const used = prefixesInUse();
  const start = createHash('sha256').update(seed).digest().readUInt16BE(0);
  for (let i = 0; i < 50 * 256; i++) {
    const n = (start + i) % (50 * 256);
    const prefix = `10.${200 + Math.floor(n / 256)}.${n % 256}`;
    if (!used.has(prefix)) return prefix;
  }
  throw new NetnsError('no free 10.200-249.x.0/24 for the cluster network');
}

/** Short names (an interface name has at most 15 bytes): one id per cluster directory. */
export function netIdOf(dir: string): string {
  return createHash('sha256').update(dir).digest('hex').slice(0, 6);
}

/** Makes the bridge, one namespace per node and their links; returns the plan kept in cluster.json. */
export function createNetwork(dir: string, names: string[]): NetPlan {
  if (!isRoot()) throw new NetnsError('network namespaces need root (run as root, or without --isolated)');
  const id = netIdOf(dir);
  const prefix = pickPrefix(dir);
  const plan: NetPlan = {
    prefix,
    bridge: `fpb${id}`,
    gateway: `${prefix}.1`,
    nodes: names.map((name, i) => ({ name, netns: `fp${id}-${name}`, address: `${prefix}.${FIRST_HOST + i}` })),
    cuts: [],
  };
  try {
    build(plan, id);
  } catch (error) {
    destroyNetwork(plan);
    throw error;
  }
  return plan;
}

function build(plan: NetPlan, id: string): void {
  ip(['link', 'add', plan.bridge, 'type', 'bridge']);
  ip(['addr', 'add', `${plan.gateway}/24`, 'dev', plan.bridge]);
  ip(['link', 'set', plan.bridge, 'up']);
  for (const [i, node] of plan.nodes.entries()) {
    const host = `fpv${id}${i}`;
    ip(['netns', 'add', node.netns]);
    ip(['link', 'add', host, 'type', 'veth', 'peer', 'name', DEVICE, 'netns', node.netns]);
    ip(['link', 'set', host, 'master', plan.bridge, 'up']);
    inNs(node.netns, ['addr', 'add', `${node.address}/24`, 'dev', DEVICE]);
    inNs(node.netns, ['link', 'set', DEVICE, 'up']);
    inNs(node.netns, ['link', 'set', 'lo', 'up']);
  }
}

/** The command that runs `command args` inside the node's namespace. */
export function inNamespace(node: NetNode, command: string, args: string[]): { command: string; args: string[] } {
  return { command: 'ip', args: ['netns', 'exec', node.netns, command, ...args] };
}

function nodeNamed(plan: NetPlan, name: string): NetNode {
  const node = plan.nodes.find((n) => n.name === name);
  if (!node)
    throw new NetnsError(
      `no node "${name}" in the cluster network; nodes: ${plan.nodes.map((n) => n.name).join(', ')}`,
    );
  return node;
}

/**
 * Cuts every path between group `a` and group `b` (default: every other node), both ways, by
 * drops. Cuts add up until heal().
 */
export function partition(plan: NetPlan, a: string[], b?: string[]): void {
  const left = a.map((name) => nodeNamed(plan, name));
  const right = (b ?? plan.nodes.map((n) => n.name).filter((name) => !a.includes(name))).map((name) =>
    nodeNamed(plan, name),
  );
  if (left.length === 0 || right.length === 0) throw new NetnsError('a partition needs a node on each side');
  for (const x of left)
    for (const y of right) {
      if (x === y) throw new NetnsError(`${x.name} cannot be on both sides of a partition`);
      for (const [from, to] of [
        [x, y],
        [y, x],
      ] as const)
        inNs(from.netns, ['neigh', 'replace', to.address, 'lladdr', NOWHERE_MAC, 'dev', DEVICE, 'nud', 'permanent']);
      plan.cuts.push([x.name, y.name]);
    }
}

/** Every cut removed: each namespace forgets its false neighbours and asks again (ARP). */
export function heal(plan: NetPlan): void {
  for (const node of plan.nodes) inNs(node.netns, ['neigh', 'flush', 'dev', DEVICE, 'nud', 'all']);
  plan.cuts = [];
}

/** Removes every namespace (their veth ends go with them), the bridge and its address. Idempotent. */
export function destroyNetwork(plan: NetPlan): void {
  const present = new Set(
    ip(['netns', 'list'])
      .split('\n')
      .map((line) => line.split(' ')[0]),
  );
  for (const node of plan.nodes) if (present.has(node.netns)) ip(['netns', 'delete', node.netns]);
  try {
    ip(['link', 'delete', plan.bridge]);
  } catch {
    // already gone
  }
}

/** What of `plan` is still on this host (namespaces, bridge): empty after destroyNetwork. */
export function leftovers(plan: NetPlan): string[] {
  const namespaces = new Set(
    ip(['netns', 'list'])
      .split('\n')
      .map((line) => line.split(' ')[0]),
  );
  const links = ip(['-o', 'link']);
  return [
    ...plan.nodes.filter((n) => namespaces.has(n.netns)).map((n) => `netns ${n.netns}`),
    ...(links.includes(`${plan.bridge}:`) ? [`bridge ${plan.bridge}`] : []),
    ...(ip(['-o', '-4', 'addr']).includes(`${plan.prefix}.`) ? [`addresses in ${plan.prefix}.0/24`] : []),
  ];
}
