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
  const named = [
    ...report.warmups.map((run, i) => ({ name: `warm-up ${i + 1} (${run.label})`, run })),
    ...report.runs.map((run, i) => ({ name: `${i + 1}. ${run.label}`, run })),
  ];
  const rows = named.map(({ name, run }) => [
    name,
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
  const names = [...new Set(report.runs.map((run) => run.label))];
  return names.map((name) => ({ name, runs: report.runs.filter((run) => run.label === name) }));
}

/** CPU ms per paid order of each node, summed over a configuration's runs. */
function perOrder(config: Config): { byNode: Record<string, number>; machine: number; coresBusy: number } {
  const paid = config.runs.reduce((sum, run) => sum + run.load.paid, 0);
  const elapsedMs = config.runs.reduce((sum, run) => sum + run.load.elapsedMs, 0);
  const byNode: Record<string, number> = {};
  let machineMs = 0;
  for (const run of config.runs) {
    for (const [name, ms] of Object.entries(run.cpu.byNodeMs)) byNode[name] = (byNode[name] ?? 0) + ms / paid;
    machineMs += run.cpu.machineMs;
  }
  return { byNode, machine: machineMs / paid, coresBusy: machineMs / elapsedMs };
}

const NODE_ORDER = ['pg', 'monitor', 'nats', 'api', 'worker', 'channel', 'haproxy', 'driver'];
const rank = (name: string) => NODE_ORDER.findIndex((prefix) => name.startsWith(prefix));

function cpuRows(report: ClusterReport, all: Config[]): string[] {
  const tables = all.map(perOrder);
  const names = [...new Set(tables.flatMap((t) => Object.keys(t.byNode)))].sort(
    (a, b) => rank(a) - rank(b) || a.localeCompare(b),
  );
  const label = (name: string) => (report.roles[name] ? `${name} (${report.roles[name]})` : name);
  const rows = names.map((name) => [label(name), ...tables.map((t) => fixed(t.byNode[name], 2))]);
  const sum = (t: (typeof tables)[number]) => Object.values(t.byNode).reduce((a, b) => a + b, 0);
  rows.push(['sum of the nodes and the driver', ...tables.map((t) => fixed(sum(t), 2))]);
  rows.push(['machine (every process)', ...tables.map((t) => fixed(t.machine, 2))]);
  rows.push(['cores busy (machine)', ...tables.map((t) => `${fixed(t.coresBusy, 2)} of ${os.cpus().length}`)]);
  return table(['CPU ms per paid order', ...all.map((c) => c.name)], rows);
}

// Node.js runs a process's JavaScript on one core; PostgreSQL, nats-server and HAProxy use every core.
const ONE_CORE = ['api', 'worker', 'channel', 'driver'];

/** What bounds the first configuration on this machine, and per node if each had a machine of its own. */
function bound(report: ClusterReport, first: Config): string[] {
  const { byNode, coresBusy } = perOrder(first);
  const cores = os.cpus().length;
  const ours = Object.values(byNode).reduce((a, b) => a + b, 0);
  const rate = (1000 * cores) / ours;
  const ceilings = Object.entries(byNode)
    .filter(([name]) => name !== 'driver')
    .map(([name, ms]) => ({ name, ms, ceiling: ((ONE_CORE.some((p) => name.startsWith(p)) ? 1 : cores) * 1000) / ms }))
    .sort((a, b) => a.ceiling - b.ceiling);
  const top = [...ceilings].sort((a, b) => b.ms - a.ms).slice(0, 3);
  const worst = ceilings[0];
  return [
    `bound (${first.name}): the machine was ${fixed(coresBusy, 2)} of ${cores} cores busy; the nodes and the driver spent ${fixed(ours, 2)} ms per paid order,`,
    `  so ${cores} cores allow at most ~${fixed(rate, 0)} paid orders/s; the largest shares: ${top.map((t) => `${t.name} ${fixed((100 * t.ms) / ours, 0)} %`).join(', ')}.`,
    worst
      ? `  With a ${cores}-core machine per node (a Node.js process uses one core), the first node to saturate would be ${worst.name} at ~${fixed(worst.ceiling, 0)} paid orders/s`
      : '',
    worst
      ? `  (CPU alone, from these per-order costs; the hot SKU's row lock and the synchronous commit's round trip to the standby bound it too).`
      : '',
  ].filter(Boolean);
}

function failoverLines(report: ClusterReport): string[] {
  const outages = report.failover.map((f) => f.outageMs);
  if (outages.length === 0) return [];
  const rejoins = report.failover.map((f) => f.rejoinMs);
  return [
    `Failover: from the SIGKILL of the primary's node to the first create accepted through HAProxy, ${outages.length} kills:`,
    `  median ${int(median(outages))} ms (min ${int(Math.min(...outages))}, max ${int(Math.max(...outages))}); each: ${report.failover.map((f) => `${f.killed} ${int(f.outageMs)}`).join(', ')}`,
    `  the killed node back as the synchronous standby after clusterStart: median ${int(median(rejoins))} ms (min ${int(Math.min(...rejoins))}, max ${int(Math.max(...rejoins))})`,
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
    'CPU per paid order (utime + stime from /proc/<pid>/stat; a node is its process group and every descendant of its leader), summed over the runs of each configuration:',
    ...cpuRows(report, all),
    ...(all[0] ? bound(report, all[0]) : []),
    `checks: every run's SKU counters (confirmed ≤ stock, total = available + held + confirmed, confirmed ≥ PAID answers); ${report.reconciliation}`,
    ...report.failures.map((failure) => `FAIL: ${failure}`),
  ];
  return lines.join('\n');
}
