import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';

export const NODE_KINDS = ['postgres', 'monitor', 'nats', 'api', 'worker', 'haproxy', 'channel'] as const;
export type NodeKind = (typeof NODE_KINDS)[number];

/** One process of the local cluster, as `cluster.json` keeps it: enough to find it, kill it and start it again. */
export interface NodeRecord {
  name: string;
  kind: NodeKind;
  /** The process group's leader: a node is its whole group (a pg_autoctl keeper and its postgres). */
  pid: number;
  url: string;
  command: string;
  args: string[];
  /** Only what differs from the environment `cluster up` ran in. */
  env: Record<string, string>;
  log: string;
  /** PostgreSQL nodes: the data directory pg_autoctl keeps. */
  dataDir?: string;
  /** `cluster up --isolated`: the node's network namespace and its address there (netns.ts). */
  netns?: string;
  address?: string;
}

export type NodeSpec = Omit<NodeRecord, 'pid'>;

/**
 * Starts a node detached in its own process group (so `cluster up` may exit and leave it running,
 * and a kill takes every process of the node), its output appended to its log.
 */
export function spawnNode(spec: NodeSpec, cwd: string): NodeRecord {
  const fd = openSync(spec.log, 'a');
  try {
    const child = spawn(spec.command, spec.args, {
      cwd,
      detached: true,
      stdio: ['ignore', fd, fd],
      env: { ...process.env, ...spec.env },
    });
    if (child.pid === undefined) throw new Error(`cannot start ${spec.name} (${spec.command})`);
    child.on('error', () => undefined); // a start failure shows as a dead pid and in its log
    child.unref();
    return { ...spec, pid: child.pid };
  } finally {
    closeSync(fd);
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Every process below `root`, from /proc: the parent is the 4th field of /proc/PID/stat, after the name. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(root);
  return found;
}

const quietly = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
};

/**
 * Signals the node's process group and, for SIGKILL, every process below it at the same moment:
 * PostgreSQL's backends each lead a process group of their own (they call setsid), and a walsender
 * left alive after its postmaster would go on shipping WAL that a dead host could not have sent.
 */
export function signalNode(pid: number, signal: NodeJS.Signals): void {
  const below = signal === 'SIGKILL' ? descendants(pid) : [];
  quietly(-pid, signal);
  for (const child of below) quietly(child, signal);
}

export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Thrown by a probe: stop waiting at once (what was waited for can no longer happen). */
export class GiveUp extends Error {}

/** Polls `probe` until it returns a value; `what` names the wait in the error after `timeoutMs`. */
export async function waitUntil<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof GiveUp) throw error;
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (${(last as Error).message})` : ''}`);
    await sleep(200);
  }
}

/** Free loopback ports, held until all are found so two of them cannot be the same. */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** The first of `ports` that cannot be listened on now (in use), if any. */
export async function portInUse(ports: readonly number[]): Promise<number | undefined> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (!free) return port;
  }
  return undefined;
}
