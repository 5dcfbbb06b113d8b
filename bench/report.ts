import type { DriverResult } from './driver.ts';
import type { ClusterReport } from './cluster.bench.ts';
import { formatCluster } from './cluster.report.ts';
import type { FlashReport } from './flash.bench.ts';
import { formatFlash, formatWallet } from './flash.report.ts';
import type { WalletReport } from './wallet.bench.ts';
import { formatRecovery, type RecoveryReport } from './recovery.bench.ts';
import type { OrdersReport, OrdersRun } from './orders.bench.ts';
import type { OrdersCounts } from './options.ts';
import type { OutboxReport, OutboxRun } from './outbox.bench.ts';
import type { DeliveryCheck } from './outbox.seed.ts';
import type { StockCheck } from './orders.stock.ts';

/** Everything one `flashpay bench` measured; `--json` prints exactly this. */
export interface BenchReport {
  date: string;
  quick: boolean;
  runtimeMs: number;
  machine: MachineInfo;
  orders?: OrdersReport & { counts: OrdersCounts };
  outbox?: OutboxReport;
  /** Issue 16's create-path runs (P1, P2, P5, P7). */
  flash?: FlashReport;
  /** Issue 16's P6: recovery of UNKNOWN orders against the provider's query rate. */
  recovery?: RecoveryReport;
  /** Issue 38 item 3's W1: wallet pays vs card pays of one tenant. */
  wallet?: WalletReport;
  /** Issue 33: a local cluster's sync/async and N/1 API ratios, failover times, CPU per node. */
  cluster?: ClusterReport;
  ok: boolean;
}

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  node: string;
  postgres: string;
  synchronousCommit: string;
  database: string;
  poolSize: number;
  driver: string;
  /** os.loadavg() 1-minute figure at the start and end: above the core count, something else was running. */
  loadAverage: { start: number; end: number };
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

const fixed = (value: number | null | undefined, digits = 1) =>
  value === null || value === undefined ? '—' : value.toFixed(digits);

function answers(result: DriverResult): string {
  const statuses = Object.entries(result.statuses).map(([status, n]) => `${status}×${n}`);
  const codes = Object.entries(result.codes).map(([code, n]) => `${code}×${n}`);
  return [...statuses, ...codes].join(' ');
}

function stockText(check: StockCheck, answersOk: boolean): string {
  const verdict = check.ok && answersOk ? 'ok' : 'FAIL';
  return `${verdict}: ${check.orders} ordered ≤ ${check.stock} stock, oversold SKUs ${check.oversoldSkus}, counter mismatches ${check.counterMismatches}${answersOk ? '' : ', unexpected answers'}`;
}

function orderRows(run: OrdersRun): string[][] {
  const row = (label: string, target: 'flashpay' | 'baseline') => {
    const figures = run[target];
    const ratios = target === 'flashpay' ? [fixed(run.ratio.throughput, 2), fixed(run.ratio.p99, 2)] : ['', ''];
    return [
      label,
      target,
      fixed(figures.perSecond),
      fixed(figures.p50Ms, 2),
      fixed(figures.p99Ms, 2),
      answers(figures),
      ...ratios,
      stockText(figures.stock, figures.answersOk),
    ];
  };
  return [row(run.description, 'flashpay'), row('', 'baseline')];
}

export function formatOrders(orders: OrdersReport & { counts: OrdersCounts }): string {
  const { counts } = orders;
  const title = `Order creation: POST /v1/orders vs the baseline route, ${counts.concurrency} concurrent buyers, ${counts.requests} requests per run, ${counts.users} users`;
  const header = ['run', 'target', 'req/s', 'p50 ms', 'p99 ms', 'answers', 'ratio req/s', 'ratio p99', 'check'];
  const invariant = `every SKU: total = available + held + confirmed: ${orders.brokenSkus === 0 ? 'ok' : `FAIL (${orders.brokenSkus} SKUs broken)`}`;
  return [title, table(header, orders.runs.flatMap(orderRows)), invariant].join('\n');
}

function deliveryText(check: DeliveryCheck): string {
  const arrivals =
    Object.entries(check.arrivals)
      .map(([effect, n]) => `${effect} ${n}`)
      .join(', ') || 'none';
  return (
    `${check.ok ? 'ok' : 'FAIL'}: published ${check.published}/${check.events}, pending ${check.pending}, dead ${check.dead}, retried ${check.retried}; ` +
    `consumer ${arrivals}; ship_count=1 for ${check.shippedOrders - check.shipCountNotOne}/${check.events}; per relay ${check.perRelay.join('/')}`
  );
}

function outboxRow(run: OutboxRun): string[] {
  const f = run.flashpay;
  const applied = f.appliedPerSecond === undefined ? '' : fixed(f.appliedPerSecond);
  const errors = f.errors > 0 ? ` (${f.errors} errors, first: ${f.firstError ?? '?'})` : '';
  return [
    run.sink,
    String(run.relays),
    fixed(f.perSecond),
    applied,
    fixed(f.batchP50Ms, 2),
    fixed(f.batchP99Ms, 2),
    fixed(f.deliverP99Ms, 2),
    fixed(run.baseline.perSecond),
    fixed(run.baseline.batchP99Ms, 2),
    fixed(run.ratio.throughput, 3),
    fixed(run.ratio.p99, 2),
    deliveryText(run.check) + errors,
  ];
}

export function formatOutbox(outbox: OutboxReport): string {
  const title = `Outbox delivery: ${outbox.events} ORDER_PAID events, batch ${outbox.batchSize}, relays (createRelay) vs the bare claim-and-mark loop`;
  const header = [
    'sink',
    'relays',
    'events/s',
    'applied/s',
    'batch p50',
    'batch p99',
    'deliver p99',
    'baseline ev/s',
    'baseline p99',
    'ratio ev/s',
    'ratio p99',
    'check',
  ];
  const note =
    "consumer: the consumer's batch apply alone, in process, with no relay (its events read before the clock): " +
    'a relay sharing these cores delivers at most 1 / (1 / baseline + 1 / consumer) events/s to it';
  return [title, table(header, outbox.runs.map(outboxRow)), note, ...outbox.skipped].join('\n');
}

export function formatReport(report: BenchReport): string {
  const m = report.machine;
  const lines = [
    `flashpay bench, ${report.date}${report.quick ? ' (quick)' : ''}: ${(report.runtimeMs / 1000).toFixed(1)} s, ${report.ok ? 'all checks ok' : 'CHECKS FAILED'}`,
    `machine: ${m.cpus} × ${m.cpuModel}; node ${m.node}; PostgreSQL ${m.postgres}, synchronous_commit=${m.synchronousCommit}, pool ${m.poolSize}`,
    `load average (1 min): ${m.loadAverage.start.toFixed(1)} at start, ${m.loadAverage.end.toFixed(1)} at end${Math.max(m.loadAverage.start, m.loadAverage.end) > m.cpus ? ' (busy machine: absolute figures are low; compare ratios only with runs at a similar load)' : ''}`,
    `database: ${m.database}`,
    `driver: ${m.driver}`,
  ];
  if (report.orders) lines.push('', formatOrders(report.orders));
  if (report.flash) lines.push('', formatFlash(report.flash));
  if (report.outbox) lines.push('', formatOutbox(report.outbox));
  if (report.recovery) lines.push('', formatRecovery(report.recovery));
  if (report.wallet) lines.push('', formatWallet(report.wallet));
  if (report.cluster) lines.push('', formatCluster(report.cluster));
  lines.push(
    '',
    'Ratios are flashpay / baseline from this same run: req/s or events/s above 1 means faster, p99 above 1 means slower.',
  );
  return `${lines.join('\n')}\n`;
}
