import { parseBenchOptions } from '../../bench/options.ts';
import { formatReport } from '../../bench/report.ts';
import { runBench } from '../../bench/run.ts';

/**
 * `flashpay bench [--quick] [--json]`: order creation and outbox delivery on real HTTP against a
 * database of its own, each run next to a baseline measured the same way (docs/benchmarks/journal.md).
 * Figures go to stdout (one JSON document with --json); progress goes to stderr. No thresholds:
 * the exit code is non-zero only when a correctness check (oversell, exactly-once) failed.
 */
export async function benchCommand(argv: string[]): Promise<void> {
  const options = parseBenchOptions(argv);
  const report = await runBench(options, (line) => process.stderr.write(`bench: ${line}\n`));
  process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  if (!report.ok) process.exitCode = 1;
}
