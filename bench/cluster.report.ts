import os from 'node:os';
import type { ClusterReport, ClusterRun } from './cluster.bench.ts';
import { round } from './stats.ts';

// The text of the cluster part: the runs in the order they ran, the two ratios, the failover
// times, the CPU per paid order of each node in each configuration, and what bounds the throughput.

const fixed = (value: number | null | undefined, digits = 1) =>
  value === null || value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : round((sorted[middle - 1]! + sorted[middle]!) / 2, 0);
};
const int = (ms: number) => Math.round(ms).toLocaleString('en-US');

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    `  ${cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd()}`;
  return [line(header), ...rows.map(line)];
}

function runRows(report: ClusterReport): string[] {
  let timed = 0;
  const rows = report.runs.map((run) => [
    run.warmup ? `warm-up (${run.label})` : `${++timed}. ${run.label}`,
    String(run.load.orders),
    fixed(run.load.paidPerSecond),
    fixed(run.load.orderLatency.p50Ms),
    fixed(run.load.orderLatency.p99Ms),
    Object.entries(run.load.answers)
      .map(([answer, n]) => `${answer}×${n}`)
      .join(' '),
    run.failures.length === 0 ? 'ok' : `FAIL: ${run.failures.join('; ')}`,
  ]);
  return table(['run', 'orders', 'paid/s', 'p50 ms', 'p99 ms', 'answers (create; pay)', 'SKU check'], rows);
}

interface Config {
  name: string;
  runs: ClusterRun[];
}

function configs(report: ClusterReport): Config[] {
  const timed = report.runs.filter((run) => !run.warmup);
  const names = [...new Set(timed.map((run) => run.label))];
  return names.map((name) => ({ name, runs: timed.filter((run) => run.label === name) }));
}

interface PerOrder {
  /** CPU ms per paid order: nodes, the driver, this process; `pg1/walsender` parts are inside pg1. */
  byNode: Record<string, number>;
  ours: number;
  machine: number;
  interrupts: number;
  coresBusy: number;
  commits: number;
  walKiB: number;
}

/** CPU ms (and the primary's commits and WAL) per paid order, summed over a configuration's runs. */
function perOrder(config: Config): PerOrder {
  const total = (f: (run: ClusterRun) => number) => config.runs.reduce((sum, run) => sum + f(run), 0);
  const paid = total((run) => run.load.paid);
  const byNode: Record<string, number> = {};
  for (const run of config.runs)
    for (const [name, ms] of Object.entries(run.cpu.byNodeMs)) byNode[name] = (byNode[name] ?? 0) + ms / paid;
  const machineMs = total((run) => run.cpu.machineMs);
  const interruptsMs = total((run) => run.cpu.interruptsMs);
  return {
    byNode,
    ours: Object.entries(byNode).reduce((sum, [name, ms]) => (name.includes('/') ? sum : sum + ms), 0),
    machine: machineMs / paid,
    interrupts: interruptsMs / paid,
    coresBusy: (machineMs + interruptsMs) / total((run) => run.load.elapsedMs),
    commits: total((run) => run.primary.commits) / paid,
    walKiB: total((run) => run.primary.walBytes) / 1024 / paid,
  };
}

const NODE_ORDER = ['pg', 'monitor', 'nats', 'api', 'worker', 'channel', 'haproxy', 'driver', 'bench'];
const rank = (name: string) => NODE_ORDER.findIndex((prefix) => name.startsWith(prefix));

function cpuRows(report: ClusterReport, all: Config[]): string[] {
  const tables = all.map(perOrder);
  const names = [...new Set(tables.flatMap((t) => Object.keys(t.byNode)))].sort(
    (a, b) => rank(a) - rank(b) || a.localeCompare(b),
  );
  const label = (name: string) => {
    const [node, part] = name.split('/');
    if (part) return `  ${node}: ${part === 'the rest' ? 'the rest (walwriter, keeper…, exited processes)' : part}`;
    return report.roles[name] ? `${name} (${report.roles[name]})` : name;
  };
  const row = (name: string, f: (t: PerOrder) => string) => [name, ...tables.map(f)];
  return table(
    ['CPU ms per paid order', ...all.map((c) => c.name)],
    [
      ...names.map((name) => row(label(name), (t) => fixed(t.byNode[name], 2))),
      row('sum of the above', (t) => fixed(t.ours, 2)),
      row('machine: every process', (t) => fixed(t.machine, 2)),
      row('machine: irq + softirq + steal', (t) => fixed(t.interrupts, 2)),
      row('cores busy (machine)', (t) => `${fixed(t.coresBusy, 2)} of ${os.cpus().length}`),
      row("primary's commits per paid order", (t) => fixed(t.commits, 2)),
      row("primary's WAL KiB per paid order", (t) => fixed(t.walKiB, 1)),
    ],
  );
}

// Node.js runs a process's JavaScript on one core; PostgreSQL, nats-server and HAProxy use every core.
const ONE_CORE = ['api', 'worker', 'channel'];
// The load, not the service: no machine of its own in the estimate.
const ONE_CORE_OURS = ['driver', 'bench (this process)'];

/** What bounds the first configuration on this machine, and per node if each had a machine of its own. */
function bound(first: Config): string[] {
  const { byNode, ours, coresBusy } = perOrder(first);
  const cores = os.cpus().length;
  const ceilings = Object.entries(byNode)
    .filter(([name]) => !name.includes('/') && !ONE_CORE_OURS.includes(name))
    .map(([name, ms]) => ({ name, ms, ceiling: ((ONE_CORE.some((p) => name.startsWith(p)) ? 1 : cores) * 1000) / ms }))
    .sort((a, b) => a.ceiling - b.ceiling);
  const top = [...ceilings].sort((a, b) => b.ms - a.ms).slice(0, 3);
  const worst = ceilings[0];
  const lines = [
    `bound (${first.name}): the machine was ${fixed(coresBusy, 2)} of ${cores} cores busy; the processes above spent ${fixed(ours, 2)} ms per paid order,`,
    `  so ${cores} cores allow at most ~${fixed((1000 * cores) / ours, 0)} paid orders/s; the largest shares: ${top.map((t) => `${t.name} ${fixed((100 * t.ms) / ours, 0)} %`).join(', ')}.`,
  ];
  if (worst)
    lines.push(
      `  With a ${cores}-core machine per node (a Node.js process uses one core), the first to saturate would be ${worst.name} at ~${fixed(worst.ceiling, 0)} paid orders/s`,
      `  (CPU alone, from these per-order costs on a saturated machine; the hot SKU's row lock and the commit's round trip to the standby bound it too).`,
    );
  return lines;
}

function spread(values: number[]): string {
  return `median ${int(median(values))} ms (min ${int(Math.min(...values))}, max ${int(Math.max(...values))})`;
}

function failoverLines(report: ClusterReport): string[] {
  const samples = report.failover;
  if (samples.length === 0) return [];
  return [
    `Failover: from the SIGKILL of the primary's node to the first create accepted through HAProxy, ${samples.length} kills:`,
    `  ${spread(samples.map((f) => f.outageMs))}; each: ${samples.map((f) => `${f.killed} ${int(f.outageMs)}`).join(', ')}`,
    `  of which until the monitor showed the standby promoted: ${spread(samples.map((f) => f.promotedMs))}`,
    `  the killed node back as the synchronous standby after clusterStart: ${spread(samples.map((f) => f.rejoinMs))}`,
  ];
}

export function formatCluster(report: ClusterReport): string {
  if (report.skipped) return `Cluster (issue 33): ${report.skipped}`;
  const all = configs(report);
  const lines = [
    `Cluster (issue 33): ${report.setup}; PostgreSQL ${report.postgres}; up in ${fixed(report.upMs / 1000)} s, the part ${fixed(report.runtimeMs / 1000)} s: ${report.ok ? 'all checks ok' : 'CHECKS FAILED'}`,
    `driver: ${report.driver}`,
    `Create then pay through HAProxy, ${report.buyers} buyers on one SKU per run (stock = orders), ${report.ordersPerRun} orders per run (~${report.runSeconds} s at the second warm-up's rate), in this order:`,
    ...runRows(report),
    `ratio async / sync (runs 1–4, ABBA): ${fixed(report.ratios.asyncOverSync, 3)}`,
    `ratio ${all[0]?.name.replace('sync, ', '') ?? 'N APIs'} / 1 API (runs 4–7, ABBA): ${fixed(report.ratios.manyOverOne, 3)}`,
    ...failoverLines(report),
    'CPU per paid order (utime + stime from /proc/<pid>/stat; a node is its process group and every descendant of its leader; PostgreSQL nodes split by process title), over the timed runs of each configuration:',
    ...cpuRows(report, all),
    ...(all[0] ? bound(all[0]) : []),
    `checks: every run's SKU counters (confirmed ≤ stock, total = available + held + confirmed, confirmed ≥ PAID answers); ${report.reconciliation}`,
    ...report.failures.map((failure) => `FAIL: ${failure}`),
  ];
  return lines.join('\n');
}
