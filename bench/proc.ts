import { readdirSync, readFileSync } from 'node:fs';

// CPU readings from /proc for the harnesses (Linux only): PostgreSQL's processes and the machine.

/** Nanoseconds on a CPU of one process (`/proc/<pid>/schedstat`); throws when it cannot be read. */
const schedNs = (pid: number | string): number => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);

/** Nanoseconds on a CPU of each process named `postgres`, by pid (processes gone meanwhile are skipped). */
export function postgresNsByPid(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') byPid.set(pid, schedNs(pid));
    } catch {
      // gone meanwhile
    }
  }
  return byPid;
}

/**
 * Nanoseconds on a CPU of every process named `postgres`. A difference of two readings
 * undercounts, or goes below zero, when a process that used CPU exited between them (an
 * autovacuum worker): read such a round as unknown, or use postgresNsBetween.
 */
export function postgresNs(): number {
  let sum = 0;
  for (const ns of postgresNsByPid().values()) sum += ns;
  return sum;
}

/**
 * PostgreSQL's CPU between two postgresNsByPid readings, per process, so that a process that exited
 * meanwhile (a pool's connection closed by an earlier run) does not make it go below zero; what such
 * a process used in between is not counted, and a process started in between counts from zero.
 */
export function postgresNsBetween(before: Map<string, number>, after: Map<string, number>): number {
  let sum = 0;
  for (const [pid, ns] of after) sum += ns - (before.get(pid) ?? 0);
  return sum;
}

/** [busy, all] jiffies of the machine. */
export function machineJiffies(): [number, number] {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const all = f.reduce((a, b) => a + b, 0);
  return [all - f[3]! - f[4]!, all];
}

/** Nanoseconds on a CPU of one process; undefined where /proc cannot tell (not Linux, gone). */
export function processNs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    return schedNs(pid);
  } catch {
    return undefined;
  }
}
