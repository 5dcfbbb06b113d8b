import { readdirSync, readFileSync } from 'node:fs';
import type { NodeRecord } from '../src/cluster/index.ts';
import { machineJiffies } from './proc.ts';

// The CPU of each node of a local cluster, read from /proc/<pid>/stat (Linux; utime + stime in
// clock ticks, CLK_TCK = 100 on Linux). A node is its process group (cluster.json keeps the
// leader) and every descendant of its leader: PostgreSQL's postmaster puts each child (backend,
// walwriter, walsender) in a process group of its own, so the group alone holds only runuser,
// pg_autoctl and the postmaster, not the processes that do the work.

const CLK_TCK = 100;
const MS_PER_TICK = 1000 / CLK_TCK;

interface ProcessTicks {
  pid: number;
  ppid: number;
  pgrp: number;
  ticks: number;
}

function readProcess(pid: string): ProcessTicks | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name (which may hold spaces and parentheses): state ppid pgrp … utime stime.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      pid: Number(pid),
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      ticks: Number(fields[11]) + Number(fields[12]),
    };
  } catch {
    return undefined; // gone meanwhile
  }
}

/** Ticks by pid, per node name (plus `extra` single processes, e.g. the driver); machine busy jiffies. */
export interface CpuReading {
  byNode: Map<string, Map<number, number>>;
  machineBusy: number;
}

export function readCpu(nodes: readonly NodeRecord[], extra: Record<string, number | undefined> = {}): CpuReading {
  const processes = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(readProcess)
    .filter((p): p is ProcessTicks => p !== undefined);
  const children = new Map<number, ProcessTicks[]>();
  for (const p of processes) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const byNode = new Map<string, Map<number, number>>();
  for (const node of nodes) {
    const members = new Map<number, number>();
    const queue = processes.filter((p) => p.pgrp === node.pid || p.pid === node.pid);
    for (let p = queue.pop(); p; p = queue.pop()) {
      if (members.has(p.pid)) continue;
      members.set(p.pid, p.ticks);
      queue.push(...(children.get(p.pid) ?? []));
    }
    byNode.set(node.name, members);
  }
  for (const [name, pid] of Object.entries(extra)) {
    const p = pid === undefined ? undefined : processes.find((q) => q.pid === pid);
    if (p) byNode.set(name, new Map([[p.pid, p.ticks]]));
  }
  return { byNode, machineBusy: machineJiffies()[0] };
}

/**
 * Milliseconds of CPU per node between two readings, per process: a process that exited in
 * between is not counted (a pool's connection closed), one started in between counts from zero.
 */
export function cpuBetween(
  before: CpuReading,
  after: CpuReading,
): { byNodeMs: Record<string, number>; machineMs: number } {
  const byNodeMs: Record<string, number> = {};
  for (const [name, pids] of after.byNode) {
    let ticks = 0;
    for (const [pid, now] of pids) ticks += now - (before.byNode.get(name)?.get(pid) ?? 0);
    byNodeMs[name] = ticks * MS_PER_TICK;
  }
  // /proc/stat counts USER_HZ jiffies, the same 100 a second.
  return { byNodeMs, machineMs: (after.machineBusy - before.machineBusy) * MS_PER_TICK };
}
