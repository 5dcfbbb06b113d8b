import { readdirSync, readFileSync } from 'node:fs';
import type { NodeRecord } from '../src/cluster/index.ts';

// The CPU of each node of a local cluster, read from /proc/<pid>/stat (Linux; clock ticks,
// CLK_TCK = 100 on Linux). A node is its process group (cluster.json keeps the leader) and every
// descendant of its leader: PostgreSQL's postmaster puts each child (backend, walwriter,
// walsender) in a process group of its own, so the group alone holds only runuser, pg_autoctl and
// the postmaster, not the processes that do the work. A node's figure is the sum over its
// processes of utime + stime + cutime + cstime: a process that exits in between (a backend of a
// health check, a keeper's pg_ctl) is then counted through the member that reaped it.

const CLK_TCK = 100;
const MS_PER_TICK = 1000 / CLK_TCK;

interface ProcessTicks {
  pid: number;
  ppid: number;
  pgrp: number;
  /** utime + stime */
  own: number;
  /** cutime + cstime: the children it has waited for */
  reaped: number;
}

function readProcess(pid: string): ProcessTicks | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name (which may hold spaces and parentheses): state ppid pgrp … utime stime cutime cstime.
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return { pid: Number(pid), ppid: f[1]!, pgrp: f[2]!, own: f[11]! + f[12]!, reaped: f[13]! + f[14]! };
  } catch {
    return undefined; // gone meanwhile
  }
}

/** A node's ticks (own and reaped, over its processes), and by pid the live processes of each PostgreSQL part. */
export interface CpuReading {
  byNode: Map<string, number>;
  /** `pg1/backends`, `pg1/walsender`: live processes only, by pid (inside the node's own figure). */
  parts: Map<string, Map<number, number>>;
  /** The machine's jiffies from /proc/stat: processes (user, nice, system) and irq + softirq + steal. */
  machine: { processes: number; interrupts: number };
}

/** A PostgreSQL process's part by its title: a flashpay backend, a walsender, or neither. */
function postgresPart(pid: number): string | undefined {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    if (title.startsWith('postgres: walsender')) return 'walsender';
    return /^postgres: \S+ flashpay /.test(title) ? 'backends' : undefined;
  } catch {
    return undefined;
  }
}

function machineJiffies(): CpuReading['machine'] {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { processes: user! + nice! + system!, interrupts: irq! + softirq! + (steal ?? 0) };
}

function membersOf(leader: number, processes: ProcessTicks[], children: Map<number, ProcessTicks[]>) {
  const members = new Map<number, ProcessTicks>();
  const queue = processes.filter((p) => p.pgrp === leader || p.pid === leader);
  for (let p = queue.pop(); p; p = queue.pop()) {
    if (members.has(p.pid)) continue;
    members.set(p.pid, p);
    queue.push(...(children.get(p.pid) ?? []));
  }
  return [...members.values()];
}

/** Every node's ticks now; `extra` names single processes (the driver, this process), counted alone. */
export function readCpu(nodes: readonly NodeRecord[], extra: Record<string, number | undefined> = {}): CpuReading {
  const processes = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(readProcess)
    .filter((p): p is ProcessTicks => p !== undefined);
  const children = new Map<number, ProcessTicks[]>();
  for (const p of processes) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const byNode = new Map<string, number>();
  const parts = new Map<string, Map<number, number>>();
  for (const node of nodes) {
    const members = membersOf(node.pid, processes, children);
    byNode.set(
      node.name,
      members.reduce((sum, p) => sum + p.own + p.reaped, 0),
    );
    if (node.kind !== 'postgres') continue;
    for (const p of members) {
      const part = postgresPart(p.pid);
      if (!part) continue;
      const key = `${node.name}/${part}`;
      parts.set(key, (parts.get(key) ?? new Map<number, number>()).set(p.pid, p.own));
    }
  }
  for (const [name, pid] of Object.entries(extra)) {
    const p = pid === undefined ? undefined : processes.find((q) => q.pid === pid);
    if (p) byNode.set(name, p.own);
  }
  return { byNode, parts, machine: machineJiffies() };
}

export interface CpuUse {
  /** ms per node, and per `name/part` of a PostgreSQL node (already inside the node's own figure). */
  byNodeMs: Record<string, number>;
  /** ms of every process on the machine (user + system), and of interrupts (irq, softirq, steal). */
  machineMs: number;
  interruptsMs: number;
}

/**
 * Milliseconds of CPU per node between two readings. A PostgreSQL node's parts count their live
 * processes (a backend that exited meanwhile is in `the rest`, through the postmaster that reaped it).
 */
export function cpuBetween(before: CpuReading, after: CpuReading): CpuUse {
  const byNodeMs: Record<string, number> = {};
  for (const [name, ticks] of after.byNode) byNodeMs[name] = (ticks - (before.byNode.get(name) ?? 0)) * MS_PER_TICK;
  const partsOf = new Map<string, number>();
  for (const [key, pids] of after.parts) {
    let ticks = 0;
    for (const [pid, now] of pids) ticks += now - (before.parts.get(key)?.get(pid) ?? 0);
    byNodeMs[key] = ticks * MS_PER_TICK;
    const node = key.split('/')[0]!;
    partsOf.set(node, (partsOf.get(node) ?? 0) + ticks * MS_PER_TICK);
  }
  for (const [node, ms] of partsOf) byNodeMs[`${node}/the rest`] = (byNodeMs[node] ?? 0) - ms;
  // /proc/stat counts USER_HZ jiffies, the same 100 a second.
  return {
    byNodeMs,
    machineMs: (after.machine.processes - before.machine.processes) * MS_PER_TICK,
    interruptsMs: (after.machine.interrupts - before.machine.interrupts) * MS_PER_TICK,
  };
}
