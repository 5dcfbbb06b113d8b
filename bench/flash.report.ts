import type { FlashReport, FlashRun, FlashTarget } from './flash.bench.ts';

// The text of issue 16's runs (P1, P2, P5, P7): one line per target, then the ratios and checks.

const fixed = (value: number | null | undefined, digits = 1) =>
  value === null || value === undefined ? '—' : value.toFixed(digits);

function answers(target: FlashTarget): string {
  const parts = [
    ...Object.entries(target.statuses).map(([status, n]) => `${status}×${n}`),
    ...Object.entries(target.codes).map(([code, n]) => `${code}×${n}`),
  ];
  const replayed = target.replayed?.true;
  if (replayed) parts.push(`replayed×${replayed}`);
  return parts.join(' ');
}

function runText(run: FlashRun): string[] {
  const header = `${run.id} ${run.description}: ${run.ok ? 'ok' : 'FAIL'}`;
  const rows = run.targets.map(
    (t) =>
      `  ${t.name.padEnd(26)} ${fixed(t.perSecond).padStart(9)} req/s  p50 ${fixed(t.p50Ms, 2).padStart(8)} ms  p99 ${fixed(t.p99Ms, 2).padStart(8)} ms  peak RSS ${fixed(t.peakRssMb)} MiB  ${answers(t)}`,
  );
  const ratios = Object.entries(run.ratios).map(([name, value]) => `${name} ${fixed(value, 2)}×`);
  return [header, ...rows, `  ratio: ${ratios.join(', ')}`, `  checks: ${run.checks.join('; ')}`];
}

export function formatFlash(report: FlashReport): string {
  return ['Issue 16, create path (req/s; ratios of req/s from this same run):', ...report.runs.flatMap(runText)].join(
    '\n',
  );
}

/** Issue 38 item 3's W1, in the same lines as the create path's runs. */
export function formatWallet(report: { runs: FlashRun[] }): string {
  return ['Issue 38, wallet pays (req/s; ratio of req/s from this same run):', ...report.runs.flatMap(runText)].join(
    '\n',
  );
}
